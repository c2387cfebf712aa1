# Client control protocol codec and ring descriptor validation: shared by
# mrcd, libmrc, the tests and the fuzz targets.
CORE_SRCS += common/ctlmsg.c common/ringcheck.c
