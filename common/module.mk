CORE_SRCS += common/strerror.c common/errf.c common/fdpass.c common/isotime.c \
             common/heap.c common/parse.c common/trace.c
