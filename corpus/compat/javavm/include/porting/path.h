/* suite compat: CVM's path limits (Linux: PATH_MAX) */
#ifndef SUITE_COMPAT_PATH_H
#define SUITE_COMPAT_PATH_H
#include <limits.h>
#define CVM_PATH_MAXLEN PATH_MAX
#endif
