/* mrc release version, shared by mrcd, mrcctl and libmrc. */
#ifndef MRC_VERSION_H
#define MRC_VERSION_H
#define MRC_VERSION "0.1.0"
#endif
