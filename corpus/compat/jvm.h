/* suite compat: what JCOV takes from the VM's jvm.h: access flags and constant-pool tags
   (the JDK's classfile_constants.h) and the masks of the modifiers a class file may carry */
#ifndef SUITE_COMPAT_JVM_H
#define SUITE_COMPAT_JVM_H
#include <jni.h>
#include <classfile_constants.h>
#define JVM_RECOGNIZED_CLASS_MODIFIERS \
    (JVM_ACC_PUBLIC | JVM_ACC_FINAL | JVM_ACC_SUPER | JVM_ACC_INTERFACE | JVM_ACC_ABSTRACT | \
     JVM_ACC_ANNOTATION | JVM_ACC_ENUM | JVM_ACC_SYNTHETIC)
#define JVM_RECOGNIZED_METHOD_MODIFIERS \
    (JVM_ACC_PUBLIC | JVM_ACC_PRIVATE | JVM_ACC_PROTECTED | JVM_ACC_STATIC | JVM_ACC_FINAL | \
     JVM_ACC_SYNCHRONIZED | JVM_ACC_BRIDGE | JVM_ACC_VARARGS | JVM_ACC_NATIVE | \
     JVM_ACC_ABSTRACT | JVM_ACC_STRICT | JVM_ACC_SYNTHETIC)
#endif
