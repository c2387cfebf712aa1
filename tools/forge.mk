# mrc-forge keeps its rules next to its sources (the Makefile reads */*.mk).
include tools/forge/forge.mk
