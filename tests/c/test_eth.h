/* What eth-test's C unit tests share and the product does not need. */
#ifndef TEST_ETH_H
#define TEST_ETH_H

#include <stdlib.h>

#include "eth-test/eth_proto.h"

/* The receiver keeps its streams until it exits; a test that makes many frees them. */
static inline void et_stream_free(et_stream *s)
{
    free(s->bits);
    s->bits = NULL;
}

#endif
