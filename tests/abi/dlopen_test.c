/* Loads libwharf.so with dlopen (no link-time dependency, as an existing C runtime would),
 * resolves every symbol named on the command line (the library's exported list), and
 * drives the main calls through the resolved pointers. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "wharf/wharf.h"

typedef uint32_t (*abi_fn)(void);
typedef const char* (*version_fn)(void);
typedef void (*opts_init_fn)(wharf_runtime_options*);
typedef wharf_status* (*rt_create_fn)(const wharf_runtime_options*, wharf_runtime**);
typedef void (*rt_free_fn)(wharf_runtime*);
typedef wharf_backend (*rt_backend_fn)(const wharf_runtime*);

int main(int argc, char** argv) {
  void* h;
  int i, missing = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s libwharf.so [symbol...]\n", argv[0]);
    return 2;
  }
  h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  for (i = 2; i < argc; ++i) {
    if (!dlsym(h, argv[i])) {
      fprintf(stderr, "symbol %s does not resolve\n", argv[i]);
      ++missing;
    }
  }
  {
    abi_fn abi = (abi_fn)dlsym(h, "wharf_abi_version");
    version_fn ver = (version_fn)dlsym(h, "wharf_version");
    opts_init_fn init = (opts_init_fn)dlsym(h, "wharf_runtime_options_init");
    rt_create_fn create = (rt_create_fn)dlsym(h, "wharf_runtime_create");
    rt_free_fn destroy = (rt_free_fn)dlsym(h, "wharf_runtime_free");
    rt_backend_fn backend = (rt_backend_fn)dlsym(h, "wharf_runtime_backend");
    wharf_runtime_options o;
    wharf_runtime* rt = NULL;
    if (!abi || !ver || !init || !create || !destroy || !backend) return 1;
    if (abi() != WHARF_ABI_VERSION) {
      fprintf(stderr, "ABI %u, header %d\n", abi(), WHARF_ABI_VERSION);
      return 1;
    }
    init(&o);
    o.backend = WHARF_BACKEND_HOST;
    if (create(&o, &rt) != NULL || !rt || backend(rt) != WHARF_BACKEND_HOST) return 1;
    destroy(rt);
    printf("dlopen: wharf %s, %d symbols resolved\n", ver(), argc - 2);
  }
  dlclose(h);
  return missing ? 1 : 0;
}
