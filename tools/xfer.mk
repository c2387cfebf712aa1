# mrc-xfer keeps its rules next to its sources (the Makefile reads */*.mk).
include tools/xfer/xfer.mk
