/* The engine's memory per QP at its defaults (mrce_cfg_default), the one
 * computation behind the figure the docs quote: tests/test_docs.c checks
 * README.md and docs/design.md against it and bench/bench_qpmem.c prints
 * it beside what mrcd's QPs measure. */
#ifndef MRC_TESTS_SUPPORT_QPBYTES_H
#define MRC_TESTS_SUPPORT_QPBYTES_H

#include <stddef.h>

/* mrce_qp_bytes() of an engine created with mrce_cfg_default(); 0 if the
 * engine cannot be created. */
size_t mrc__qp_bytes_default(void);

#endif
