# The operator interface (daemon/oper/): mrcctl's socket and verbs, the
# event stream with rate-limited logging, admin state, Prometheus over
# HTTP, admin state kept across restarts, the verbs' handler table
# (oper_verbs.c, from codec/operverbs.def).  Built on the core only; linked into mrcd (daemon/daemon.mk).
MRCD_OPER_SRCS := daemon/oper/oper.c daemon/oper/oper_events.c \
                  daemon/oper/oper_data.c daemon/oper/oper_admin.c \
                  daemon/oper/oper_http.c daemon/oper/outq.c daemon/oper/oper_state.c \
                  daemon/oper/oper_verbs.c daemon/oper/oper_probe.c \
                  daemon/oper/oper_stats.c daemon/oper/oper_fabric.c \
                  daemon/oper/oper_strag.c
