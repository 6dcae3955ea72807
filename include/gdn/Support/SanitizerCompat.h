/*===- SanitizerCompat.h - instrumented code beside Debian's LLVM -*- C -*-===//
//
// Included first into every file of a sanitized build (GDN_SANITIZE).
//
// LLVM's inline allocators (BumpPtrAllocator, ArrayRecycler) poison memory
// they hand out later when the including file is built with AddressSanitizer
// (llvm/Support/Compiler.h). The LLVM and MLIR libraries are not
// instrumented: an allocator whose slab our code started is later served by
// their copy of the same inline code, which never unpoisons it, and our code
// then reads MLIR's own objects as "poisoned". Turning the annotations off
// here keeps ASan's checks of every real heap, stack and global access;
// only use of a freed BumpPtrAllocator object goes unreported.
//
//===----------------------------------------------------------------------===*/
#ifndef GDN_SUPPORT_SANITIZERCOMPAT_H
#define GDN_SUPPORT_SANITIZERCOMPAT_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))
#endif
#endif

#endif /* GDN_SUPPORT_SANITIZERCOMPAT_H */
