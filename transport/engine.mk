CORE_SRCS += transport/engine.c transport/store.c transport/path.c transport/qp.c \
             transport/sender.c transport/receiver.c transport/cc_nscc.c \
             transport/timers.c
