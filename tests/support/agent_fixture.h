/*
 * What the agent tests build alike: a provider talking to the scripted model server, and a
 * registry of the built-in skills plus two process skills, "slow" (sleeps 30 s, for cancels
 * and interruptions) and "wipe" (destructive, for approvals).
 */
#ifndef REIN_TEST_AGENT_FIXTURE_H
#define REIN_TEST_AGENT_FIXTURE_H

#include <rein/rein.h>

/*
 * A provider of the OpenAI-compatible wire at base_url (ms_openai_url()), model "test-model",
 * retries 5 ms apart. Fails the test when it cannot be made.
 */
rein_provider *test_ms_provider(const char *base_url);
/*
 * A registry with the built-in skills (file roots: dir) and the skills slow and wipe, whose
 * manifests are written under dir/skills. Fails the test when it cannot be made.
 */
rein_registry *test_agent_registry(const char *dir);

#endif
