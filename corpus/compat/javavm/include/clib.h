/* suite compat: CVM's clib.h gathers the C library headers */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
