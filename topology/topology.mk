# topology/: the fabric model, its file format and path/EV enumeration.
CORE_SRCS += topology/topo.c topology/topo_gen.c topology/topo_json.c \
             topology/topo_dump.c topology/paths.c
