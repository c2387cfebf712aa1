# The operator module: mrcctl's socket and verbs, the event stream with
# rate-limited logging, admin state, Prometheus over HTTP (daemon/oper*.c).
MRCD_SRCS += daemon/oper.c daemon/oper_events.c daemon/oper_data.c \
             daemon/oper_admin.c daemon/oper_http.c
