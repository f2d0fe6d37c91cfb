// Hand-written C for the few Vulkan calls the Go bindings lack (Vulkan 1.1+
// queries) and for the DMA hot path, which records, submits and polls in one
// cgo call. Only the struct layouts used here are declared, so no Vulkan
// headers are needed at build time.
#ifndef GOVRAM_VK_NATIVE_H
#define GOVRAM_VK_NATIVE_H
#include <stdint.h>
#include <stddef.h>

// gv_load opens the Vulkan loader (libvulkan.so.1, then libvulkan.so) and
// returns its vkGetInstanceProcAddr, or NULL with a reason in err.
void* gv_load(char* err, size_t errlen);

typedef struct {
	uint64_t max_alloc;       // VkPhysicalDeviceMaintenance3Properties.maxMemoryAllocationSize
	uint32_t driver_id;
	char driver_name[256];
	char driver_info[256];
	int has_props2;
} gv_props2;

int gv_query_props2(void* instance, void* phys, int want_driver, gv_props2* out);
int gv_query_budget(void* instance, void* phys, uint64_t* budget, uint64_t* usage);

typedef struct gv_device gv_device;

gv_device* gv_device_new(void* instance, void* device);
void gv_device_free(gv_device* d);

enum { GV_OP_COPY = 0, GV_OP_FILL = 1, GV_OP_UPDATE = 2, GV_OP_BARRIER = 3 };

// gv_op is one command. For GV_OP_UPDATE, data_off indexes the data blob
// passed to gv_submit (vkCmdUpdateBuffer copies it at record time).
typedef struct {
	uint32_t kind;
	uint32_t value;
	uint64_t src, dst;        // VkBuffer handles
	uint64_t src_off, dst_off, size;
	uint64_t data_off;
} gv_op;

int32_t gv_submit(gv_device* d, int q, void* queue, void* cmd, uint64_t fence,
                  const gv_op* ops, int n, const void* data);
int32_t gv_wait(gv_device* d, uint64_t fence, uint64_t timeout_ns);
#endif
