# The Makefile includes */*.mk (one level deep); the fabric tool keeps its
# rules next to its sources.
include tools/fabric/fabric.mk
