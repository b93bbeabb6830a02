/* suite compat: CVM porting header -> the C library header */
#include <stdio.h>
