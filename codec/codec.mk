# The codecs both ends of a socket share, pure functions with no I/O:
# client messages (climsg: libmrc <-> mrcd), operator JSON (operjson:
# mrcctl <-> mrcd), Prometheus text (prom: mrcctl stats --prom and mrcd's
# metrics endpoint) and ring descriptor checks (ringcheck).  In CORE_SRCS so
# mrcd, the tests and the fuzz targets share them; libmrc takes climsg.c
# through lib/lib.mk.
CORE_SRCS += codec/climsg.c codec/ringcheck.c codec/operjson.c codec/prom.c
