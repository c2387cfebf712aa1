# Lowest first (docs/design.md, "The engine"): the store, then the files
# that use it, then the front door (engine.c).
CORE_SRCS += transport/zmem.c transport/store.c transport/timers.c transport/peer.c \
             transport/evs.c transport/evs_pick.c transport/ack_tx.c transport/wpool.c transport/qp.c \
             transport/sender.c transport/loss.c transport/ack_rx.c \
             transport/receiver.c transport/cc_nscc.c transport/engine.c
