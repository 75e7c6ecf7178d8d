/* A minimal Triton native plugin (Triton 3.9's PluginUtils.h ABI, written in C so that no MLIR
 * headers are needed): one pass, "tritium_probe", whose add callback only counts its calls.
 * Build: cc -shared -fPIC -DAPI_VERSION=2 -DTRITON_VERSION='"3.9.0"' -o probe.so native_plugin.c */
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *name, *version;
  void (*add_pass)(void *pass_manager, const void *args);
  void (*register_pass)(void);
} PassInfo;

typedef struct {
  uint32_t api_version;
  const char *plugin_name, *plugin_version;
  PassInfo *passes;
  size_t num_passes;
  void *dialects;
  size_t num_dialects;
  void *ops;
  size_t num_ops;
  const char *triton_version;
} PluginInfo;

static int added;

static void add_probe(void *pass_manager, const void *args) {
  (void)pass_manager;
  (void)args;
  added++;
}

static void register_probe(void) {}

static PassInfo passes[] = {{"tritium_probe", "0.1", add_probe, register_probe}};

__attribute__((visibility("default"))) PluginInfo *tritonGetPluginInfo(void) {
  static PluginInfo info = {API_VERSION, "tritium_probe", "0.1", passes, 1, NULL, 0, NULL, 0, TRITON_VERSION};
  return &info;
}

__attribute__((visibility("default"))) int tritium_probe_added(void) { return added; }
