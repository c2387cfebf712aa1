# mrc-nccl-harness (tools/nccl-harness/): drives any v11 NCCL net plugin as
# NCCL's proxy thread does (docs/nccl.md, "The harness"); drive.c, its
# loading by NCCL's rules and verified rounds, is shared with the unit
# tests (nccl/nccl.mk).
PROGS += mrc-nccl-harness
mrc-nccl-harness_SRCS := tools/nccl-harness/harness.c tools/nccl-harness/rdv.c tools/nccl-harness/comms.c \
                         tools/nccl-harness/checks.c tools/nccl-harness/bench.c \
                         tools/nccl-harness/bench_tcp.c tools/nccl-harness/drive.c
$(B)/bin/mrc-nccl-harness: $(B)/lib/libmrc.a | $(NCCL_PLUGIN_SO)
