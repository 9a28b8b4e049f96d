/*
 * The English lexicon of the claim grammar (english.c): closed word classes (pronouns,
 * auxiliaries, modals, negation, conditionals, prepositions, …), a few open classes that
 * matter here (nouns naming tools, outputs, files and functions), and the verbs with their
 * inflected forms and what they say (write a file, delete it, use a tool, report a result,
 * fail, pass). An -ed word that is not listed is read as a past form of some verb, so an
 * unknown verb still marks tense and still separates a verb from a later object.
 *
 * The tables are static; their sorted indexes are built once, in place, without allocating
 * (pthread_once), so the lexicon has no state that depends on the allocator.
 */
#include "claims_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct word {
    const char *w;
    uint64_t bits;
};

/* Several entries may share a word: their bits are or-ed together. */
static struct word words[] = {
    /* pronouns and determiners */
    {"i", L_PRON | L_PRON1},
    {"we", L_PRON | L_PRON1},
    {"i've", L_PRON | L_PRON1 | L_HAVE},
    {"we've", L_PRON | L_PRON1 | L_HAVE},
    {"i'd", L_PRON | L_PRON1 | L_MODAL},
    {"we'd", L_PRON | L_PRON1 | L_MODAL},
    {"i'll", L_PRON | L_PRON1 | L_MODAL},
    {"we'll", L_PRON | L_PRON1 | L_MODAL},
    {"i'm", L_PRON | L_PRON1 | L_BE},
    {"we're", L_PRON | L_PRON1 | L_BE},
    {"you", L_PRON},
    {"you'll", L_PRON | L_MODAL},
    {"you'd", L_PRON | L_MODAL},
    {"you've", L_PRON | L_HAVE},
    {"you're", L_PRON | L_BE},
    {"it", L_PRON},
    {"it's", L_PRON | L_BE},
    {"it'll", L_PRON | L_MODAL},
    {"they", L_PRON},
    {"they're", L_PRON | L_BE},
    {"they've", L_PRON | L_HAVE},
    {"they'll", L_PRON | L_MODAL},
    {"he", L_PRON},
    {"she", L_PRON},
    {"that's", L_PRON | L_BE},
    {"there's", L_BE},
    {"there", L_PRON},
    {"this", L_DET | L_PRON},
    {"that", L_DET | L_REL},
    {"these", L_DET},
    {"those", L_DET},
    {"the", L_DET},
    {"a", L_DET},
    {"an", L_DET},
    {"my", L_DET},
    {"your", L_DET},
    {"our", L_DET},
    {"its", L_DET},
    {"their", L_DET},
    {"his", L_DET},
    {"her", L_DET},
    {"some", L_DET},
    {"any", L_DET},
    {"another", L_DET},
    {"each", L_DET | L_QUANT},
    {"every", L_DET | L_QUANT},
    {"all", L_QUANT | L_NOW},
    {"both", L_QUANT | L_NOW},
    {"me", 0},
    {"us", 0},
    {"them", 0},
    {"him", 0},
    /* auxiliaries */
    {"have", L_HAVE},
    {"has", L_HAVE},
    {"had", L_HAVE},
    {"having", L_HAVE},
    {"'ve", L_HAVE},
    {"am", L_BE},
    {"is", L_BE},
    {"are", L_BE},
    {"was", L_BE},
    {"were", L_BE},
    {"be", L_BE},
    {"been", L_BE},
    {"being", L_BE},
    {"get", L_BE},
    {"got", L_BE},
    {"gets", L_BE},
    {"do", L_DO},
    {"does", L_DO},
    {"did", L_DO},
    /* modals */
    {"will", L_MODAL},
    {"would", L_MODAL},
    {"shall", L_MODAL},
    {"should", L_MODAL},
    {"can", L_MODAL},
    {"could", L_MODAL},
    {"may", L_MODAL},
    {"might", L_MODAL},
    {"must", L_MODAL},
    {"ought", L_MODAL},
    {"gonna", L_MODAL},
    {"wanna", L_MODAL},
    {"gotta", L_MODAL},
    {"let's", L_MODAL | L_LET},
    {"let", L_LET},
    {"please", L_LET},
    {"kindly", L_LET},
    /* negation */
    {"not", L_NEG},
    {"never", L_NEG},
    {"no", L_NEG | L_NUMW},
    {"nothing", L_NEG},
    {"none", L_NEG | L_QUANT},
    {"nobody", L_NEG},
    {"neither", L_NEG},
    {"nor", L_NEG},
    {"cannot", L_NEG | L_MODAL},
    {"can't", L_NEG | L_MODAL},
    {"couldn't", L_NEG | L_MODAL},
    {"won't", L_NEG | L_MODAL},
    {"wouldn't", L_NEG | L_MODAL},
    {"shouldn't", L_NEG | L_MODAL},
    {"mustn't", L_NEG | L_MODAL},
    {"didn't", L_NEG | L_DO},
    {"don't", L_NEG | L_DO},
    {"doesn't", L_NEG | L_DO},
    {"haven't", L_NEG | L_HAVE},
    {"hasn't", L_NEG | L_HAVE},
    {"hadn't", L_NEG | L_HAVE},
    {"isn't", L_NEG | L_BE},
    {"aren't", L_NEG | L_BE},
    {"wasn't", L_NEG | L_BE},
    {"weren't", L_NEG | L_BE},
    {"unable", L_NEG},
    {"yet", 0},
    {"without", L_PREP},
    /* conditionals and time clauses that make what follows hypothetical */
    {"if", L_COND},
    {"unless", L_COND},
    {"whether", L_COND},
    {"once", L_COND},
    {"whenever", L_COND},
    {"until", L_COND},
    {"provided", L_COND},
    {"assuming", L_COND},
    {"suppose", L_COND},
    {"supposing", L_COND},
    {"otherwise", L_COND | L_CONJ},
    /* hedges */
    {"probably", L_HEDGE},
    {"likely", L_HEDGE},
    {"unlikely", L_HEDGE | L_NEG},
    {"perhaps", L_HEDGE},
    {"maybe", L_HEDGE},
    {"possibly", L_HEDGE},
    {"presumably", L_HEDGE},
    {"supposedly", L_HEDGE},
    {"hopefully", L_HEDGE},
    {"apparently", L_HEDGE},
    {"seemingly", L_HEDGE},
    {"ideally", L_HEDGE},
    /* relatives and conjunctions that start a new clause */
    {"which", L_REL | L_WH},
    {"who", L_REL | L_WH},
    {"whom", L_REL},
    {"whose", L_REL},
    {"where", L_WH},
    {"what", L_WH},
    {"when", L_WH},
    {"why", L_WH},
    {"how", L_WH},
    {"but", L_CONJ},
    {"although", L_CONJ},
    {"though", L_CONJ},
    {"however", L_CONJ},
    {"whereas", L_CONJ},
    {"while", L_CONJ},
    {"because", L_CONJ},
    {"since", L_CONJ},
    {"so", L_CONJ},
    {"and", 0},
    {"or", 0},
    {"then", L_NOW},
    /* prepositions */
    {"to", L_DEST},
    {"into", L_DEST},
    {"in", L_DEST},
    {"inside", L_DEST},
    {"within", L_DEST},
    {"as", L_DEST},
    {"at", L_DEST},
    {"onto", L_DEST},
    {"under", L_DEST},
    {"over", L_DEST},
    {"of", L_PREP},
    {"for", L_PREP},
    {"from", L_PREP | L_TPREP},
    {"with", L_PREP | L_TPREP},
    {"via", L_PREP | L_TPREP},
    {"using", L_PREP | L_TPREP},
    {"through", L_PREP | L_TPREP},
    {"per", L_PREP | L_TPREP},
    {"by", L_PREP | L_TPREP},
    {"about", L_PREP},
    {"on", L_PREP},
    {"than", L_PREP},
    {"like", L_PREP},
    {"after", L_PREP},
    {"before", L_PREP | L_COND},
    {"across", L_PREP},
    {"between", L_PREP},
    {"against", L_PREP},
    {"instead", L_PREP},
    {"except", L_PREP},
    {"including", L_PREP},
    /* adverbs that sit inside a verb group */
    {"now", L_NOW | L_ADV},
    {"already", L_NOW | L_ADV},
    {"just", L_NOW | L_ADV},
    {"also", L_NOW | L_ADV},
    {"successfully", L_NOW | L_ADV},
    {"finally", L_NOW | L_ADV},
    {"first", L_NOW | L_ADV},
    {"next", L_NOW | L_ADV},
    {"then", L_NOW | L_ADV},
    {"still", L_NOW | L_ADV},
    {"again", L_NOW | L_ADV},
    {"even", L_ADV},
    {"only", L_ADV},
    {"simply", L_ADV},
    {"actually", L_ADV},
    {"indeed", L_ADV},
    {"really", L_ADV},
    {"quickly", L_ADV},
    {"properly", L_ADV},
    {"correctly", L_ADV},
    {"fully", L_ADV},
    {"completely", L_ADV},
    {"automatically", L_ADV},
    {"manually", L_ADV},
    {"recently", L_ADV},
    {"previously", L_ADV},
    {"subsequently", L_ADV},
    {"afterwards", L_ADV},
    {"immediately", L_ADV},
    {"directly", L_ADV},
    {"explicitly", L_ADV},
    {"carefully", L_ADV},
    {"cleanly", L_ADV},
    {"fine", L_ADV},
    {"ever", L_ADV},
    {"here", L_ADV},
    {"today", L_ADV},
    {"yesterday", L_PAST_T},
    {"ago", L_PAST_T},
    {"tomorrow", L_ADV},
    {"later", L_ADV},
    {"soon", L_ADV},
    {"everything", L_NOUNISH},
    /* question words and helpers */
    {"shall", L_MODAL},
    /* nouns after a tool's name */
    {"tool", L_TOOLN},
    {"tools", L_TOOLN},
    {"skill", L_TOOLN},
    {"skills", L_TOOLN},
    {"function", L_TOOLN | L_FNN},
    {"call", L_TOOLN},
    {"calls", L_TOOLN},
    {"api", L_TOOLN},
    {"command", L_TOOLN},
    {"plugin", L_TOOLN},
    {"service", L_TOOLN},
    {"endpoint", L_TOOLN},
    {"query", L_TOOLN},
    {"lookup", L_TOOLN},
    {"run", L_TOOLN},
    {"invocation", L_TOOLN},
    {"request", L_TOOLN},
    {"output", L_OUTN},
    {"outputs", L_OUTN},
    {"result", L_OUTN | L_NOUNISH},
    {"results", L_OUTN | L_NOUNISH},
    {"response", L_OUTN},
    {"responses", L_OUTN},
    {"answer", L_OUTN},
    {"reply", L_OUTN},
    {"data", L_OUTN | L_NOUNISH},
    {"value", L_OUTN | L_NOUNISH},
    {"values", L_OUTN},
    {"findings", L_OUTN},
    {"matches", L_OUTN},
    {"hits", L_OUTN},
    {"report", L_OUTN},
    {"readout", L_OUTN},
    {"file", L_FILEN},
    {"files", L_FILEN},
    {"folder", L_FILEN},
    {"directory", L_FILEN},
    {"dir", L_FILEN},
    {"script", L_FILEN},
    {"module", L_FILEN},
    {"header", L_FILEN},
    {"config", L_FILEN},
    {"document", L_FILEN},
    {"method", L_FNN},
    {"methods", L_FNN},
    {"functions", L_FNN},
    {"helper", L_FNN},
    {"helpers", L_FNN},
    {"routine", L_FNN},
    {"procedure", L_FNN},
    {"handler", L_FNN},
    {"callback", L_FNN},
    {"class", L_FNN},
    {"constructor", L_FNN},
    {"macro", L_FNN},
    {"error", L_FAILN},
    {"errors", L_FAILN},
    {"exception", L_FAILN},
    {"failure", L_FAILN},
    {"timeout", L_FAILN},
    {"traceback", L_FAILN},
    {"stacktrace", L_FAILN},
    /* heads of semi-modals (X to …) */
    {"need", L_SEMI},
    {"needs", L_SEMI},
    {"want", L_SEMI},
    {"wants", L_SEMI},
    {"plan", L_SEMI},
    {"plans", L_SEMI},
    {"planning", L_SEMI},
    {"going", L_SEMI},
    {"about", L_SEMI | L_PREP},
    {"intend", L_SEMI},
    {"intends", L_SEMI},
    {"try", L_SEMI},
    {"trying", L_SEMI},
    {"tried", L_SEMI},
    {"attempt", L_SEMI},
    {"attempted", L_SEMI},
    {"hope", L_SEMI},
    {"wish", L_SEMI},
    {"able", L_SEMI},
    {"supposed", L_SEMI},
    {"expected", L_SEMI},
    {"meant", L_SEMI},
    {"have", L_HAVE},
    {"worth", L_SEMI},
    {"better", L_SEMI},
    {"ready", L_NOUNISH},
    /* reported speech */
    {"say", L_SAYV},
    {"says", L_SAYV},
    {"said", L_SAYV},
    {"mention", L_SAYV},
    {"mentions", L_SAYV},
    {"mentioned", L_SAYV},
    {"state", L_SAYV},
    {"states", L_SAYV},
    {"stated", L_SAYV},
    {"claim", L_SAYV},
    {"claims", L_SAYV},
    {"claimed", L_SAYV},
    {"asked", L_SAYV},
    {"told", L_SAYV},
    {"tells", L_SAYV},
    {"wrote", 0},
    {"according", L_TPREP},
    /* counts */
    {"zero", L_NUMW},
    {"one", L_NUMW},
    {"two", L_NUMW},
    {"three", L_NUMW},
    {"four", L_NUMW},
    {"five", L_NUMW},
    {"six", L_NUMW},
    {"seven", L_NUMW},
    {"eight", L_NUMW},
    {"nine", L_NUMW},
    {"ten", L_NUMW},
    {"eleven", L_NUMW},
    {"twelve", L_NUMW},
    {"several", L_NUMW},
    {"many", L_NUMW},
    {"few", L_NUMW},
    /* ordinary words that may also be a tool's name */
    {"echo", L_COMMON},
    {"shell", L_COMMON},
    {"exec", L_COMMON},
    {"time", L_COMMON},
    {"date", L_COMMON},
    {"math", L_COMMON},
    {"http", L_COMMON},
    {"web", L_COMMON},
    {"sql", L_COMMON},
    {"python", L_COMMON},
    {"code", L_COMMON},
    {"git", L_COMMON},
    {"grep", L_COMMON},
    {"cat", L_COMMON},
    {"ls", L_COMMON},
    {"weather", L_COMMON},
    {"email", L_COMMON},
    {"mail", L_COMMON},
    {"browser", L_COMMON},
    {"memory", L_COMMON},
    {"database", L_COMMON},
    {"db", L_COMMON},
    {"terminal", L_COMMON},
    {"bash", L_COMMON},
    {"editor", L_COMMON},
    {"notes", L_COMMON},
    {"todo", L_COMMON},
    {"tests", L_COMMON},
    {"test", L_COMMON},
    {"build", L_COMMON},
    {"lint", L_COMMON},
};

/* forms: base, -s, past, participle, -ing */
static const struct rein__verb verbs[] = {
    /* files written */
    {{"write", "writes", "wrote", "written", "writing"}, V_WRITE | V_FN | V_IMP | V_RES | V_PUT},
    {{"save", "saves", "saved", "saved", "saving"}, V_WRITE | V_IMP | V_PUT},
    {{"store", "stores", "stored", "stored", "storing"}, V_WRITE | V_IMP | V_PUT},
    {{"export", "exports", "exported", "exported", "exporting"}, V_WRITE | V_IMP | V_PUT},
    {{"create", "creates", "created", "created", "creating"}, V_WRITE | V_FN | V_IMP | V_NORUN},
    {{"generate", "generates", "generated", "generated", "generating"},
     V_WRITE | V_RES | V_IMP | V_PUT},
    {{"update", "updates", "updated", "updated", "updating"}, V_WRITE | V_IMP | V_NORUN},
    {{"modify", "modifies", "modified", "modified", "modifying"}, V_WRITE | V_IMP | V_NORUN},
    {{"edit", "edits", "edited", "edited", "editing"}, V_WRITE | V_IMP},
    {{"change", "changes", "changed", "changed", "changing"}, V_WRITE | V_IMP | V_NORUN},
    {{"append", "appends", "appended", "appended", "appending"}, V_WRITE | V_IMP},
    {{"add", "adds", "added", "added", "adding"}, V_WRITE | V_FN | V_IMP | V_NORUN},
    {{"put", "puts", "put", "put", "putting"}, V_WRITE | V_IMP | V_PUT},
    {{"place", "places", "placed", "placed", "placing"}, V_WRITE | V_IMP | V_PUT},
    {{"dump", "dumps", "dumped", "dumped", "dumping"}, V_WRITE | V_IMP | V_PUT},
    {{"record", "records", "recorded", "recorded", "recording"}, V_WRITE | V_IMP | V_PUT},
    {{"log", "logs", "logged", "logged", "logging"}, V_WRITE | V_PUT},
    {{"output", "outputs", "outputted", "outputted", "outputting"}, V_WRITE | V_RES | V_PUT},
    {{"emit", "emits", "emitted", "emitted", "emitting"}, V_WRITE | V_RES | V_PUT},
    {{"produce", "produces", "produced", "produced", "producing"}, V_WRITE | V_RES},
    {{"rewrite", "rewrites", "rewrote", "rewritten", "rewriting"}, V_WRITE | V_FN | V_IMP},
    {{"overwrite", "overwrites", "overwrote", "overwritten", "overwriting"}, V_WRITE | V_IMP},
    {{"populate", "populates", "populated", "populated", "populating"}, V_WRITE},
    {{"fill", "fills", "filled", "filled", "filling"}, V_WRITE | V_IMP},
    {{"persist", "persists", "persisted", "persisted", "persisting"}, V_WRITE | V_PUT},
    {{"fix", "fixes", "fixed", "fixed", "fixing"}, V_WRITE | V_IMP},
    {{"patch", "patches", "patched", "patched", "patching"}, V_WRITE | V_IMP},
    {{"amend", "amends", "amended", "amended", "amending"}, V_WRITE | V_IMP},
    {{"adjust", "adjusts", "adjusted", "adjusted", "adjusting"}, V_WRITE | V_IMP},
    {{"tweak", "tweaks", "tweaked", "tweaked", "tweaking"}, V_WRITE | V_IMP},
    {{"insert", "inserts", "inserted", "inserted", "inserting"}, V_WRITE | V_IMP},
    {{"copy", "copies", "copied", "copied", "copying"}, V_WRITE | V_IMP},
    {{"move", "moves", "moved", "moved", "moving"}, V_WRITE | V_IMP},
    {{"rename", "renames", "renamed", "renamed", "renaming"}, V_WRITE | V_IMP | V_NORUN},
    {{"refactor", "refactors", "refactored", "refactored", "refactoring"}, V_WRITE | V_FN | V_IMP},
    {{"revise", "revises", "revised", "revised", "revising"}, V_WRITE | V_IMP},
    {{"replace", "replaces", "replaced", "replaced", "replacing"}, V_WRITE | V_IMP},
    {{"regenerate", "regenerates", "regenerated", "regenerated", "regenerating"}, V_WRITE | V_IMP},
    {{"serialize", "serializes", "serialized", "serialized", "serializing"}, V_WRITE | V_PUT},
    {{"flush", "flushes", "flushed", "flushed", "flushing"}, V_WRITE | V_PUT},
    {{"cache", "caches", "cached", "cached", "caching"}, V_WRITE | V_PUT},
    {{"spit", "spits", "spat", "spat", "spitting"}, V_RES},
    {{"download", "downloads", "downloaded", "downloaded", "downloading"}, V_WRITE | V_IMP},
    {{"touch", "touches", "touched", "touched", "touching"}, V_WRITE},
    {{"commit", "commits", "committed", "committed", "committing"}, V_WRITE | V_IMP},
    {{"set", "sets", "set", "set", "setting"}, V_WRITE | V_IMP},
    {{"enable", "enables", "enabled", "enabled", "enabling"}, V_WRITE | V_IMP | V_NORUN},
    {{"disable", "disables", "disabled", "disabled", "disabling"}, V_WRITE | V_IMP | V_NORUN},
    {{"configure", "configures", "configured", "configured", "configuring"},
     V_WRITE | V_IMP | V_NORUN},
    {{"introduce", "introduces", "introduced", "introduced", "introducing"},
     V_WRITE | V_FN | V_NORUN},
    {{"prepend", "prepends", "prepended", "prepended", "prepending"}, V_WRITE | V_IMP},
    {{"upload", "uploads", "uploaded", "uploaded", "uploading"}, V_WRITE | V_IMP},
    {{"format", "formats", "formatted", "formatted", "formatting"}, V_WRITE | V_IMP},
    {{"clean", "cleans", "cleaned", "cleaned", "cleaning"}, V_WRITE | V_IMP},
    {{"trim", "trims", "trimmed", "trimmed", "trimming"}, V_WRITE | V_IMP},
    {{"tidy", "tidies", "tidied", "tidied", "tidying"}, V_WRITE | V_IMP},
    {{"reformat", "reformats", "reformatted", "reformatted", "reformatting"}, V_WRITE | V_IMP},
    {{"strip", "strips", "stripped", "stripped", "stripping"}, V_WRITE | V_IMP},
    {{"compress", "compresses", "compressed", "compressed", "compressing"}, V_WRITE | V_IMP},
    {{"render", "renders", "rendered", "rendered", "rendering"}, V_WRITE | V_IMP},
    {{"plot", "plots", "plotted", "plotted", "plotting"}, V_WRITE | V_IMP},
    {{"draft", "drafts", "drafted", "drafted", "drafting"}, V_WRITE | V_IMP},
    {{"compose", "composes", "composed", "composed", "composing"}, V_WRITE | V_IMP},
    {{"bump", "bumps", "bumped", "bumped", "bumping"}, V_WRITE | V_IMP},
    {{"pin", "pins", "pinned", "pinned", "pinning"}, V_WRITE | V_IMP},
    {{"upgrade", "upgrades", "upgraded", "upgraded", "upgrading"}, V_WRITE | V_IMP},
    {{"downgrade", "downgrades", "downgraded", "downgraded", "downgrading"}, V_WRITE | V_IMP},
    {{"comment", "comments", "commented", "commented", "commenting"}, V_WRITE | V_IMP},
    {{"uncomment", "uncomments", "uncommented", "uncommented", "uncommenting"}, V_WRITE | V_IMP},
    {{"annotate", "annotates", "annotated", "annotated", "annotating"}, V_WRITE | V_IMP},
    {{"encrypt", "encrypts", "encrypted", "encrypted", "encrypting"}, V_WRITE | V_IMP},
    {{"decrypt", "decrypts", "decrypted", "decrypted", "decrypting"}, V_WRITE | V_IMP},
    {{"archive", "archives", "archived", "archived", "archiving"}, V_WRITE | V_IMP},
    {{"scaffold", "scaffolds", "scaffolded", "scaffolded", "scaffolding"}, V_WRITE | V_FN},
    {{"initialize", "initializes", "initialized", "initialized", "initializing"}, V_WRITE},
    {{"initialise", "initialises", "initialised", "initialised", "initialising"}, V_WRITE},
    {{"migrate", "migrates", "migrated", "migrated", "migrating"}, V_WRITE | V_IMP},
    {{"refresh", "refreshes", "refreshed", "refreshed", "refreshing"}, V_WRITE | V_IMP},
    {{"split", "splits", "split", "split", "splitting"}, V_WRITE | V_IMP},
    {{"inject", "injects", "injected", "injected", "injecting"}, V_WRITE | V_FN},
    {{"clear", "clears", "cleared", "cleared", "clearing"}, V_DELETE | V_IMP},
    {{"truncate", "truncates", "truncated", "truncated", "truncating"}, V_WRITE | V_IMP},
    {{"empty", "empties", "emptied", "emptied", "emptying"}, V_WRITE | V_IMP},
    {{"reset", "resets", "reset", "reset", "resetting"}, V_WRITE | V_IMP},
    /* functions */
    {{"implement", "implements", "implemented", "implemented", "implementing"}, V_FN | V_IMP},
    {{"define", "defines", "defined", "defined", "defining"}, V_FN | V_IMP},
    {{"declare", "declares", "declared", "declared", "declaring"}, V_FN | V_IMP},
    {{"expose", "exposes", "exposed", "exposed", "exposing"}, V_FN},
    {{"extract", "extracts", "extracted", "extracted", "extracting"}, V_FN | V_RES | V_IMP},
    /* files deleted */
    {{"delete", "deletes", "deleted", "deleted", "deleting"}, V_DELETE | V_IMP},
    {{"remove", "removes", "removed", "removed", "removing"}, V_DELETE | V_IMP | V_NORUN},
    {{"erase", "erases", "erased", "erased", "erasing"}, V_DELETE | V_IMP},
    {{"purge", "purges", "purged", "purged", "purging"}, V_DELETE | V_IMP},
    {{"wipe", "wipes", "wiped", "wiped", "wiping"}, V_DELETE | V_IMP},
    {{"unlink", "unlinks", "unlinked", "unlinked", "unlinking"}, V_DELETE},
    {{"trash", "trashes", "trashed", "trashed", "trashing"}, V_DELETE},
    {{"drop", "drops", "dropped", "dropped", "dropping"}, V_DELETE | V_IMP},
    /* using a tool */
    {{"use", "uses", "used", "used", "using"}, V_USE | V_IMP},
    {{"call", "calls", "called", "called", "calling"}, V_USE | V_IMP},
    {{"invoke", "invokes", "invoked", "invoked", "invoking"}, V_USE | V_IMP},
    {{"run", "runs", "ran", "run", "running"}, V_USE | V_IMP},
    {{"rerun", "reruns", "reran", "rerun", "rerunning"}, V_USE | V_IMP},
    {{"execute", "executes", "executed", "executed", "executing"}, V_USE | V_IMP},
    {{"query", "queries", "queried", "queried", "querying"}, V_USE | V_IMP},
    {{"consult", "consults", "consulted", "consulted", "consulting"}, V_USE | V_IMP},
    {{"ask", "asks", "asked", "asked", "asking"}, V_USE | V_IMP},
    {{"utilize", "utilizes", "utilized", "utilized", "utilizing"}, V_USE},
    {{"utilise", "utilises", "utilised", "utilised", "utilising"}, V_USE},
    {{"employ", "employs", "employed", "employed", "employing"}, V_USE},
    {{"leverage", "leverages", "leveraged", "leveraged", "leveraging"}, V_USE},
    {{"trigger", "triggers", "triggered", "triggered", "triggering"}, V_USE | V_IMP},
    {{"launch", "launches", "launched", "launched", "launching"}, V_USE | V_IMP},
    {{"kick", "kicks", "kicked", "kicked", "kicking"}, V_USE},
    {{"notify", "notifies", "notified", "notified", "notifying"}, V_RES | V_GIVE},
    {{"inform", "informs", "informed", "informed", "informing"}, V_RES},
    {{"fire", "fires", "fired", "fired", "firing"}, V_USE},
    {{"ping", "pings", "pinged", "pinged", "pinging"}, V_USE | V_IMP},
    {{"poll", "polls", "polled", "polled", "polling"}, V_USE},
    {{"check", "checks", "checked", "checked", "checking"}, V_USE | V_IMP},
    {{"apply", "applies", "applied", "applied", "applying"}, V_USE | V_WRITE | V_IMP},
    {{"start", "starts", "started", "started", "starting"}, V_USE | V_IMP},
    {{"try", "tries", "tried", "tried", "trying"}, V_TRY | V_IMP},
    {{"attempt", "attempts", "attempted", "attempted", "attempting"}, V_TRY},
    /* handing something to a tool */
    {{"pass", "passes", "passed", "passed", "passing"}, V_PASS | V_GIVE | V_IMP},
    {{"send", "sends", "sent", "sent", "sending"}, V_GIVE | V_RES | V_IMP},
    {{"feed", "feeds", "fed", "fed", "feeding"}, V_GIVE | V_IMP},
    {{"hand", "hands", "handed", "handed", "handing"}, V_GIVE},
    {{"submit", "submits", "submitted", "submitted", "submitting"}, V_GIVE | V_IMP},
    {{"pipe", "pipes", "piped", "piped", "piping"}, V_GIVE},
    /* a tool's result */
    {{"return", "returns", "returned", "returned", "returning"}, V_RES},
    {{"give", "gives", "gave", "given", "giving"}, V_RES | V_GIVE | V_IMP},
    {{"show", "shows", "showed", "shown", "showing"}, V_SAY | V_IMP},
    {{"report", "reports", "reported", "reported", "reporting"}, V_SAY},
    {{"indicate", "indicates", "indicated", "indicated", "indicating"}, V_SAY},
    {{"confirm", "confirms", "confirmed", "confirmed", "confirming"}, V_SAY | V_IMP},
    {{"tell", "tells", "told", "told", "telling"}, V_SAY | V_IMP},
    {{"reveal", "reveals", "revealed", "revealed", "revealing"}, V_SAY},
    {{"suggest", "suggests", "suggested", "suggested", "suggesting"}, V_SAY},
    {{"display", "displays", "displayed", "displayed", "displaying"}, V_SAY | V_IMP},
    {{"say", "says", "said", "said", "saying"}, V_SAY},
    {{"list", "lists", "listed", "listed", "listing"}, V_RES | V_IMP},
    {{"find", "finds", "found", "found", "finding"}, V_RES | V_IMP},
    {{"locate", "locates", "located", "located", "locating"}, V_RES | V_IMP},
    {{"compute", "computes", "computed", "computed", "computing"}, V_RES | V_IMP},
    {{"calculate", "calculates", "calculated", "calculated", "calculating"}, V_RES | V_IMP},
    {{"yield", "yields", "yielded", "yielded", "yielding"}, V_RES},
    {{"print", "prints", "printed", "printed", "printing"}, V_RES | V_IMP},
    {{"respond", "responds", "responded", "responded", "responding"}, V_RES},
    {{"reply", "replies", "replied", "replied", "replying"}, V_RES},
    {{"answer", "answers", "answered", "answered", "answering"}, V_RES},
    {{"come", "comes", "came", "come", "coming"}, V_RES},
    {{"turn", "turns", "turned", "turned", "turning"}, V_RES},
    {{"bring", "brings", "brought", "brought", "bringing"}, V_RES},
    {{"retrieve", "retrieves", "retrieved", "retrieved", "retrieving"}, V_RES | V_IMP},
    {{"fetch", "fetches", "fetched", "fetched", "fetching"}, V_RES | V_USE | V_IMP},
    {{"search", "searches", "searched", "searched", "searching"}, V_RES | V_USE | V_IMP},
    {{"look", "looks", "looked", "looked", "looking"}, V_USE | V_IMP},
    {{"translate", "translates", "translated", "translated", "translating"}, V_RES | V_IMP},
    {{"convert", "converts", "converted", "converted", "converting"}, V_RES | V_WRITE | V_IMP},
    {{"transform", "transforms", "transformed", "transformed", "transforming"}, V_RES | V_IMP},
    {{"normalize", "normalizes", "normalized", "normalized", "normalizing"}, V_RES | V_IMP},
    {{"parse", "parses", "parsed", "parsed", "parsing"}, V_RES | V_IMP},
    {{"summarize", "summarizes", "summarized", "summarized", "summarizing"},
     V_RES | V_WRITE | V_IMP},
    {{"deliver", "delivers", "delivered", "delivered", "delivering"}, V_RES},
    {{"echo", "echoes", "echoed", "echoed", "echoing"}, V_RES},
    {{"repeat", "repeats", "repeated", "repeated", "repeating"}, V_RES},
    {{"detect", "detects", "detected", "detected", "detecting"}, V_RES},
    {{"identify", "identifies", "identified", "identified", "identifying"}, V_RES},
    {{"count", "counts", "counted", "counted", "counting"}, V_RES | V_IMP},
    {{"measure", "measures", "measured", "measured", "measuring"}, V_RES | V_IMP},
    {{"estimate", "estimates", "estimated", "estimated", "estimating"}, V_RES},
    {{"match", "matches", "matched", "matched", "matching"}, V_RES},
    {{"get", "gets", "got", "gotten", "getting"}, V_RES | V_IMP},
    {{"obtain", "obtains", "obtained", "obtained", "obtaining"}, V_RES},
    {{"receive", "receives", "received", "received", "receiving"}, V_RES},
    {{"provide", "provides", "provided", "provided", "providing"}, V_RES | V_IMP},
    {{"surface", "surfaces", "surfaced", "surfaced", "surfacing"}, V_RES},
    {{"verify", "verifies", "verified", "verified", "verifying"}, V_SAY | V_USE | V_IMP},
    {{"determine", "determines", "determined", "determined", "determining"}, V_RES},
    {{"map", "maps", "mapped", "mapped", "mapping"}, V_RES},
    {{"resolve", "resolves", "resolved", "resolved", "resolving"}, V_RES | V_IMP},
    {{"process", "processes", "processed", "processed", "processing"}, V_RES | V_IMP},
    {{"analyze", "analyzes", "analyzed", "analyzed", "analyzing"}, V_RES | V_IMP},
    {{"sort", "sorts", "sorted", "sorted", "sorting"}, V_RES | V_IMP},
    {{"filter", "filters", "filtered", "filtered", "filtering"}, V_RES | V_IMP},
    {{"read", "reads", "read", "read", "reading"}, V_RES | V_IMP},
    {{"scan", "scans", "scanned", "scanned", "scanning"}, V_RES | V_USE | V_IMP},
    {{"crawl", "crawls", "crawled", "crawled", "crawling"}, V_RES | V_IMP},
    {{"grep", "greps", "grepped", "grepped", "grepping"}, V_RES | V_USE | V_IMP},
    {{"browse", "browses", "browsed", "browsed", "browsing"}, V_RES | V_USE | V_IMP},
    {{"evaluate", "evaluates", "evaluated", "evaluated", "evaluating"}, V_RES | V_IMP},
    {{"aggregate", "aggregates", "aggregated", "aggregated", "aggregating"}, V_RES | V_IMP},
    {{"tally", "tallies", "tallied", "tallied", "tallying"}, V_RES | V_IMP},
    {{"classify", "classifies", "classified", "classified", "classifying"}, V_RES | V_IMP},
    {{"decode", "decodes", "decoded", "decoded", "decoding"}, V_RES | V_IMP},
    {{"encode", "encodes", "encoded", "encoded", "encoding"}, V_RES | V_IMP},
    {{"enumerate", "enumerates", "enumerated", "enumerated", "enumerating"}, V_RES | V_IMP},
    {{"tabulate", "tabulates", "tabulated", "tabulated", "tabulating"}, V_RES | V_IMP},
    {{"traverse", "traverses", "traversed", "traversed", "traversing"}, V_RES | V_IMP},
    /* checks passing */
    {{"succeed", "succeeds", "succeeded", "succeeded", "succeeding"}, V_PASS | V_RES},
    {{"complete", "completes", "completed", "completed", "completing"}, V_PASS | V_RES},
    {{"finish", "finishes", "finished", "finished", "finishing"}, V_PASS | V_RES},
    {{"work", "works", "worked", "worked", "working"}, V_PASS | V_RES},
    {{"compile", "compiles", "compiled", "compiled", "compiling"}, V_PASS | V_IMP},
    {{"build", "builds", "built", "built", "building"}, V_PASS | V_IMP | V_NORUN},
    {{"green", "greens", "greened", "greened", "greening"}, V_PASS},
    /* failing */
    {{"fail", "fails", "failed", "failed", "failing"}, V_FAIL},
    {{"error", "errors", "errored", "errored", "erroring"}, V_FAIL},
    {{"crash", "crashes", "crashed", "crashed", "crashing"}, V_FAIL},
    {{"hang", "hangs", "hung", "hung", "hanging"}, V_FAIL},
    {{"throw", "throws", "threw", "thrown", "throwing"}, V_FAIL},
    {{"reject", "rejects", "rejected", "rejected", "rejecting"}, V_FAIL},
    {{"deny", "denies", "denied", "denied", "denying"}, V_FAIL},
    {{"refuse", "refuses", "refused", "refused", "refusing"}, V_FAIL},
    {{"abort", "aborts", "aborted", "aborted", "aborting"}, V_FAIL},
    {{"break", "breaks", "broke", "broken", "breaking"}, V_FAIL},
    {{"time", "times", "timed", "timed", "timing"}, V_FAIL},
    {{"stall", "stalls", "stalled", "stalled", "stalling"}, V_FAIL},
    {{"block", "blocks", "blocked", "blocked", "blocking"}, V_FAIL},
    /* states of a file */
    {{"exist", "exists", "existed", "existed", "existing"}, V_STATE},
    {{"contain", "contains", "contained", "contained", "containing"}, V_STATE},
    {{"hold", "holds", "held", "held", "holding"}, V_STATE},
    {{"include", "includes", "included", "included", "including"}, V_STATE | V_IMP | V_WRITE},
    {{"live", "lives", "lived", "lived", "living"}, V_STATE},
    {{"reside", "resides", "resided", "resided", "residing"}, V_STATE},
    {{"sit", "sits", "sat", "sat", "sitting"}, V_STATE},
    /* past forms that do not say a tool ran */
    {{"need", "needs", "needed", "needed", "needing"}, V_NORUN | V_IMP},
    {{"require", "requires", "required", "required", "requiring"}, V_NORUN},
    {{"support", "supports", "supported", "supported", "supporting"}, V_NORUN},
    {{"seem", "seems", "seemed", "seemed", "seeming"}, V_NORUN},
    {{"appear", "appears", "appeared", "appeared", "appearing"}, V_NORUN},
    {{"become", "becomes", "became", "become", "becoming"}, V_NORUN},
    {{"allow", "allows", "allowed", "allowed", "allowing"}, V_NORUN},
    {{"expect", "expects", "expected", "expected", "expecting"}, V_NORUN},
    {{"design", "designs", "designed", "designed", "designing"}, V_NORUN},
    {{"register", "registers", "registered", "registered", "registering"}, V_NORUN},
    {{"install", "installs", "installed", "installed", "installing"}, V_NORUN | V_IMP},
    {{"deprecate", "deprecates", "deprecated", "deprecated", "deprecating"}, V_NORUN},
    {{"lack", "lacks", "lacked", "lacked", "lacking"}, V_NORUN},
    {{"accept", "accepts", "accepted", "accepted", "accepting"}, V_NORUN},
    {{"take", "takes", "took", "taken", "taking"}, V_NORUN | V_IMP},
    {{"want", "wants", "wanted", "wanted", "wanting"}, V_NORUN},
    {{"intend", "intends", "intended", "intended", "intending"}, V_NORUN},
    {{"handle", "handles", "handled", "handled", "handling"}, V_NORUN},
    {{"explain", "explains", "explained", "explained", "explaining"}, V_NORUN | V_IMP},
    {{"describe", "describes", "described", "described", "describing"}, V_NORUN | V_IMP},
    {{"document", "documents", "documented", "documented", "documenting"}, V_NORUN | V_WRITE},
    /* others: imperatives, and verbs that end a verb phrase */
    {{"make", "makes", "made", "made", "making"}, V_IMP | V_WRITE},
    {{"ensure", "ensures", "ensured", "ensured", "ensuring"}, V_IMP},
    {{"open", "opens", "opened", "opened", "opening"}, V_IMP},
    {{"see", "sees", "saw", "seen", "seeing"}, V_IMP},
    {{"note", "notes", "noted", "noted", "noting"}, V_IMP},
    {{"consider", "considers", "considered", "considered", "considering"}, V_IMP},
    {{"go", "goes", "went", "gone", "going"}, V_IMP},
    {{"keep", "keeps", "kept", "kept", "keeping"}, V_IMP},
    {{"load", "loads", "loaded", "loaded", "loading"}, V_IMP | V_RES},
    {{"restart", "restarts", "restarted", "restarted", "restarting"}, V_IMP},
    {{"retry", "retries", "retried", "retried", "retrying"}, V_IMP},
    {{"review", "reviews", "reviewed", "reviewed", "reviewing"}, V_IMP},
    {{"inspect", "inspects", "inspected", "inspected", "inspecting"}, V_IMP},
    {{"test", "tests", "tested", "tested", "testing"}, V_IMP},
    {{"remember", "remembers", "remembered", "remembered", "remembering"}, V_IMP},
    {{"follow", "follows", "followed", "followed", "following"}, V_IMP},
    {{"refer", "refers", "referred", "referred", "referring"}, V_IMP},
    {{"import", "imports", "imported", "imported", "importing"}, V_IMP},
    {{"specify", "specifies", "specified", "specified", "specifying"}, V_IMP},
    {{"enter", "enters", "entered", "entered", "entering"}, V_IMP},
    {{"type", "types", "typed", "typed", "typing"}, V_IMP},
    {{"paste", "pastes", "pasted", "pasted", "pasting"}, V_IMP},
    {{"select", "selects", "selected", "selected", "selecting"}, V_IMP},
    {{"choose", "chooses", "chose", "chosen", "choosing"}, V_IMP},
    {{"pick", "picks", "picked", "picked", "picking"}, V_IMP},
    {{"clone", "clones", "cloned", "cloned", "cloning"}, V_IMP},
    {{"navigate", "navigates", "navigated", "navigated", "navigating"}, V_IMP},
    {{"merge", "merges", "merged", "merged", "merging"}, V_IMP},
    {{"email", "emails", "emailed", "emailed", "emailing"}, V_IMP | V_GIVE},
    {{"mail", "mails", "mailed", "mailed", "mailing"}, V_IMP | V_GIVE},
    {{"avoid", "avoids", "avoided", "avoided", "avoiding"}, V_IMP},
    {{"stop", "stops", "stopped", "stopped", "stopping"}, V_IMP},
    {{"wait", "waits", "waited", "waited", "waiting"}, V_IMP},
    {{"know", "knows", "knew", "known", "knowing"}, V_NORUN},
    {{"think", "thinks", "thought", "thought", "thinking"}, V_NORUN},
    {{"believe", "believes", "believed", "believed", "believing"}, V_NORUN},
    {{"assume", "assumes", "assumed", "assumed", "assuming"}, V_NORUN},
    {{"guess", "guesses", "guessed", "guessed", "guessing"}, V_NORUN},
    {{"hope", "hopes", "hoped", "hoped", "hoping"}, V_NORUN},
    {{"reach", "reaches", "reached", "reached", "reaching"}, V_USE},
    {{"access", "accesses", "accessed", "accessed", "accessing"}, V_USE},
    {{"connect", "connects", "connected", "connected", "connecting"}, V_USE | V_IMP},
    {{"help", "helps", "helped", "helped", "helping"}, V_NORUN},
    {{"let", "lets", "let", "let", "letting"}, V_IMP},
    {{"leave", "leaves", "left", "left", "leaving"}, V_IMP},
    {{"compare", "compares", "compared", "compared", "comparing"}, V_IMP | V_USE},
    {{"lint", "lints", "linted", "linted", "linting"}, V_IMP},
    {{"validate", "validates", "validated", "validated", "validating"}, V_IMP | V_RES},
    {{"depend", "depends", "depended", "depended", "depending"}, V_NORUN},
};

#define NWORDS REIN_ARRAY_SIZE(words)
#define NVERBS REIN_ARRAY_SIZE(verbs)

struct form {
    const char *w;
    uint16_t verb; /* 1-based */
    uint8_t form;
};

static struct form forms[NVERBS * 5];
static size_t nforms;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Irregular past forms of verbs the table does not list: they still mark tense and end a
 * verb phrase. */
static const char *const irregular_pasts[] = {
    "dug",        "drew",  "fed",    "fought", "felt",  "fled",   "flung",  "forgot", "froze",
    "grew",       "hid",   "knew",   "laid",   "led",   "lent",   "lit",    "lost",   "meant",
    "met",        "paid",  "rode",   "rang",   "rose",  "sang",   "sank",   "shook",  "shone",
    "shot",       "slept", "slid",   "sold",   "sped",  "spent",  "spread", "sprang", "stood",
    "stole",      "stuck", "struck", "swept",  "swam",  "swung",  "taught", "tore",   "threw",
    "understood", "woke",  "wore",   "won",    "wound", "caught", "bought", "fell",   "beat",
};

/* irregular_pasts sorted (build), so a word that is no listed verb form, most words of a
 * sentence, is looked up in it by halves instead of against each of its entries. */
static const char *pasts[REIN_ARRAY_SIZE(irregular_pasts)];

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_word(const void *a, const void *b)
{
    return strcmp(((const struct word *)a)->w, ((const struct word *)b)->w);
}

static int cmp_form(const void *a, const void *b)
{
    const struct form *x = a, *y = b;
    int c = strcmp(x->w, y->w);

    return c ? c : (int)x->verb - (int)y->verb;
}

static void build(void)
{
    static const uint8_t bit[5] = {VF_BASE, VF_S, VF_PAST, VF_PART, VF_ING};

    qsort(words, NWORDS, sizeof(words[0]), cmp_word);
    for (size_t v = 0; v < NVERBS; v++) {
        for (size_t k = 0; k < 5; k++) {
            forms[nforms].w = verbs[v].forms[k];
            forms[nforms].verb = (uint16_t)(v + 1);
            forms[nforms].form = bit[k];
            nforms++;
        }
    }
    qsort(forms, nforms, sizeof(forms[0]), cmp_form);
    memcpy(pasts, irregular_pasts, sizeof(pasts));
    qsort(pasts, REIN_ARRAY_SIZE(pasts), sizeof(pasts[0]), cmp_str);
}

/* Compares the NUL-terminated key with w[0..n). */
static int cmp_n(const char *key, const char *w, size_t n)
{
    int c = strncmp(key, w, n);

    if (c)
        return c;
    return key[n] ? 1 : 0;
}

uint64_t rein__claims_lex(const char *w, size_t n)
{
    size_t lo = 0, hi = NWORDS;
    uint64_t bits = 0;

    pthread_once(&once, build);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_n(words[mid].w, w, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < NWORDS && cmp_n(words[lo].w, w, n) == 0; lo++)
        bits |= words[lo].bits;
    return bits;
}

/* Words ending in -ed that are not past forms of a verb. */
static bool not_past(const char *w, size_t n)
{
    static const char *const list[] = {
        "indeed", "hundred", "exceed", "proceed", "succeed", "embed",  "speed",  "breed",   "bleed",
        "need",   "seed",    "feed",   "shed",    "naked",   "sacred", "wicked", "kindred", "greed",
        "tweed",  "steed",   "unused", "red",     "bed",     "wed",    "ted"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(list); i++) {
        if (cmp_n(list[i], w, n) == 0)
            return true;
    }
    return false;
}

uint16_t rein__claims_verb(const char *w, size_t n, uint8_t *form)
{
    size_t lo = 0, hi;
    uint16_t v = 0;
    uint8_t f = 0;

    pthread_once(&once, build);
    hi = nforms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_n(forms[mid].w, w, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < nforms && cmp_n(forms[lo].w, w, n) == 0; lo++) {
        if (!v)
            v = forms[lo].verb;
        if (forms[lo].verb == v)
            f |= forms[lo].form;
    }
    if (!v) {
        lo = 0;
        hi = REIN_ARRAY_SIZE(pasts);
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp_n(pasts[mid], w, n) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < REIN_ARRAY_SIZE(pasts) && cmp_n(pasts[lo], w, n) == 0) {
            v = (uint16_t)(NVERBS + 1);
            f = VF_PAST | VF_PART;
        }
    }
    if (!v && n >= 5 && w[n - 2] == 'e' && w[n - 1] == 'd' && !not_past(w, n)) {
        v = (uint16_t)(NVERBS + 1); /* some verb we do not list */
        f = VF_PAST | VF_PART;
    }
    *form = f;
    return v;
}

uint16_t rein__claims_verb_class(uint16_t v)
{
    return v >= 1 && v <= NVERBS ? verbs[v - 1].cls : 0;
}

const char *rein__claims_verb_base(uint16_t v)
{
    return v >= 1 && v <= NVERBS ? verbs[v - 1].forms[0] : "";
}
