/* suite compat: the opcode names JCOV uses, from the JDK's classfile_constants.h.
   186 was "unused" until invokedynamic took it (JDK 7); JCOV's table predates that. */
#ifndef SUITE_COMPAT_OPCODES_H
#define SUITE_COMPAT_OPCODES_H
#include <classfile_constants.h>
#define opc_ifeq JVM_OPC_ifeq
#define opc_if_acmpne JVM_OPC_if_acmpne
#define opc_ifnull JVM_OPC_ifnull
#define opc_ifnonnull JVM_OPC_ifnonnull
#define opc_iinc JVM_OPC_iinc
#define opc_wide JVM_OPC_wide
#define opc_tableswitch JVM_OPC_tableswitch
#define opc_lookupswitch JVM_OPC_lookupswitch
#define opc_monitorexit JVM_OPC_monitorexit
#define opc_xxxunusedxxx 186
#endif
