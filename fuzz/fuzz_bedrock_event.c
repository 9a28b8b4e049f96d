/*
 * Fuzz target for Bedrock's decoders (src/providers/bedrock.c) over the AWS event stream
 * framing (src/providers/eventstream.c): the input is fed in pieces as a binary
 * ConverseStream reply (preludes, both CRCs, headers of every type, exception messages), as
 * recorded JSON lines ({"contentBlockDelta": {...}}), and as one Converse body. A run that
 * decodes must give a response whose JSON form and neutral message can be built.
 */
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the binary framing */
    fuzz_decode_named("bedrock-eventstream", false, data, size);
    /* recorded JSON lines */
    fuzz_decode_named("bedrock-eventstream", true, data, size);
    fuzz_decode_named("bedrock-json", false, data, size);
    return 0;
}
