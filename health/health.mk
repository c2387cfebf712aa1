# health/: fabric-link health, localisation and shared evidence (issue 34,
# docs/health.md).  Sans-IO; health.c depends on topology/ only, feed.c
# reads the engine's events and EV states for it, suspect.c a failure's
# uplink (its other paths through it suspected at once), record.c every
# conviction counted and recorded.
CORE_SRCS += health/health.c health/feed.c health/suspect.c health/record.c
