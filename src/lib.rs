//! jvmpi-shim: placeholder, filled in below.
