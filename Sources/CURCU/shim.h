// System-library shim for liburcu (LGPL-2.1, Debian's liburcu-dev).
// Swift never calls these headers directly: the wfcqueue API passes its head as a
// transparent union, which the Swift importer rejects. CTroupe wraps every call in C.
#ifndef CURCU_SHIM_H
#define CURCU_SHIM_H
#include <urcu/wfcqueue.h>
#endif
