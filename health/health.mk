# health/: fabric-link health, localisation and shared evidence (issue 34,
# docs/health.md).  Sans-IO; depends on topology/ only.
CORE_SRCS += health/health.c
