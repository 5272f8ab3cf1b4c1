// Instrument (issue 33): is a process's per-operation level (and fabricbench's lead over nccl-tests) the layout of
// its heap inside a page, which address-space randomisation does not change (it moves whole pages)? LD_PRELOAD into
// either tool: before main, one malloc of PAD_BYTES (or, with PAD_BYTES=random, 16-8192 bytes in steps of 16 from
// /dev/urandom) that is never freed, so every later small allocation (the CUDA runtime's, NCCL's, the
// application's) sits at another offset; the size goes to $PAD_OUT. Build: cc -O2 -shared -fPIC -o pad.so pad.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* keep;

__attribute__((constructor)) static void pad(void) {
  const char* v = getenv("PAD_BYTES");
  if (!v) return;
  unsigned long n = 0;
  if (strcmp(v, "random") == 0) {
    unsigned short r = 0;
    FILE* u = fopen("/dev/urandom", "rb");
    if (u) {
      if (fread(&r, sizeof r, 1, u) != 1) r = 0;
      fclose(u);
    }
    n = 16 + 16 * (unsigned long)(r % 512);
  } else {
    n = strtoul(v, NULL, 10);
  }
  keep = malloc(n);
  if (keep) memset(keep, 0, n);
  const char* out = getenv("PAD_OUT");
  if (out) {
    FILE* f = fopen(out, "w");
    if (f) {
      fprintf(f, "%lu\n", n);
      fclose(f);
    }
  }
}
