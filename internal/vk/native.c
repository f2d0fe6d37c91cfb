#include "native.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "native_internal.h"

gv_gipa_t gv_gipa;

void* gv_load(char* err, size_t errlen) {
	const char* names[] = {"libvulkan.so.1", "libvulkan.so"};
	void* lib = NULL;
	for (int i = 0; i < 2 && lib == NULL; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char* e = dlerror();
		snprintf(err, errlen, "no Vulkan loader: %s", e ? e : "dlopen failed");
		return NULL;
	}
	gv_gipa = (gv_gipa_t)dlsym(lib, "vkGetInstanceProcAddr");
	if (gv_gipa == NULL) {
		snprintf(err, errlen, "Vulkan loader has no vkGetInstanceProcAddr");
		return NULL;
	}
	return (void*)gv_gipa;
}

// Structure types and layouts from the Vulkan specification.
#define ST_PROPS2 1000059001u
#define ST_MEMPROPS2 1000059006u
#define ST_MAINT3 1000168000u
#define ST_DRIVER 1000196000u
#define ST_BUDGET 1000237000u

typedef struct { uint32_t sType; void* pNext; } gv_base;
typedef struct { uint32_t sType; void* pNext; uint32_t maxPerSetDescriptors; uint64_t maxMemoryAllocationSize; } gv_maint3;
typedef struct { uint32_t sType; void* pNext; uint32_t driverID; char name[256]; char info[256]; uint32_t conformance; } gv_driver;
typedef struct { uint32_t sType; void* pNext; uint64_t budget[16]; uint64_t usage[16]; } gv_budget;
// The embedded core structs are larger than any driver writes into; only the chain matters here.
typedef struct { uint32_t sType; void* pNext; unsigned char core[2048]; } gv_props2_s;

typedef void (*gv_getprops2_t)(void* phys, void* props);

static gv_getprops2_t gv_instance_fn(void* instance, const char* core, const char* khr) {
	gv_getprops2_t f = (gv_getprops2_t)gv_gipa(instance, core);
	if (f == NULL) f = (gv_getprops2_t)gv_gipa(instance, khr);
	return f;
}

int gv_query_props2(void* instance, void* phys, int want_driver, gv_props2* out) {
	memset(out, 0, sizeof(*out));
	gv_getprops2_t f = gv_instance_fn(instance, "vkGetPhysicalDeviceProperties2", "vkGetPhysicalDeviceProperties2KHR");
	if (f == NULL) return 0;
	gv_maint3 m3 = {ST_MAINT3, NULL, 0, 0};
	gv_driver drv;
	memset(&drv, 0, sizeof(drv));
	drv.sType = ST_DRIVER;
	if (want_driver) m3.pNext = &drv;
	gv_props2_s p;
	memset(&p, 0, sizeof(p));
	p.sType = ST_PROPS2;
	p.pNext = &m3;
	f(phys, &p);
	out->has_props2 = 1;
	out->max_alloc = m3.maxMemoryAllocationSize;
	if (want_driver) {
		out->driver_id = drv.driverID;
		memcpy(out->driver_name, drv.name, 255);
		memcpy(out->driver_info, drv.info, 255);
	}
	return 1;
}

int gv_query_budget(void* instance, void* phys, uint64_t* budget, uint64_t* usage) {
	gv_getprops2_t f = gv_instance_fn(instance, "vkGetPhysicalDeviceMemoryProperties2", "vkGetPhysicalDeviceMemoryProperties2KHR");
	if (f == NULL) return 0;
	gv_budget b;
	memset(&b, 0, sizeof(b));
	b.sType = ST_BUDGET;
	gv_props2_s p;
	memset(&p, 0, sizeof(p));
	p.sType = ST_MEMPROPS2;
	p.pNext = &b;
	f(phys, &p);
	memcpy(budget, b.budget, sizeof(b.budget));
	memcpy(usage, b.usage, sizeof(b.usage));
	return 1;
}

// The two enumerations below are made here, in memory this code owns, not
// through the Go bindings: those marshal the output array into C memory
// whose release is tied to a finalizer that may run while the driver
// still writes into it (heap corruption, seen on the H200).
typedef struct { uint32_t queueFlags, queueCount, timestampValidBits, granularity[3]; } gv_qfprops;
typedef void (*gv_getqf_t)(void* phys, uint32_t* count, gv_qfprops* props);

uint32_t gv_queue_families(void* instance, void* phys, uint32_t* flags, uint32_t* counts, uint32_t max) {
	gv_getqf_t f = (gv_getqf_t)gv_gipa(instance, "vkGetPhysicalDeviceQueueFamilyProperties");
	if (f == NULL) return 0;
	uint32_t n = 0;
	f(phys, &n, NULL);
	if (n == 0) return 0;
	gv_qfprops* p = calloc(n, sizeof(gv_qfprops));
	if (p == NULL) return 0;
	f(phys, &n, p);
	for (uint32_t i = 0; i < n && i < max; i++) {
		flags[i] = p[i].queueFlags;
		counts[i] = p[i].queueCount;
	}
	free(p);
	return n;
}

typedef struct { char name[256]; uint32_t specVersion; } gv_extprops;
typedef int32_t (*gv_enumext_t)(void* phys, const char* layer, uint32_t* count, gv_extprops* props);

int64_t gv_extensions(void* instance, void* phys, char* buf, int64_t len) {
	gv_enumext_t f = (gv_enumext_t)gv_gipa(instance, "vkEnumerateDeviceExtensionProperties");
	if (f == NULL) return -1;
	uint32_t n = 0;
	if (f(phys, NULL, &n, NULL) != 0) return -1;
	gv_extprops* p = calloc(n ? n : 1, sizeof(gv_extprops));
	if (p == NULL) return -1;
	int32_t r = f(phys, NULL, &n, p);
	if (r != 0 && r != 5) { // VK_INCOMPLETE (5): the list grew; take what came
		free(p);
		return -1;
	}
	int64_t need = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t l = strnlen(p[i].name, sizeof(p[i].name));
		if (need + (int64_t)l + 1 <= len) {
			memcpy(buf + need, p[i].name, l);
			buf[need + l] = 0;
		}
		need += (int64_t)l + 1;
	}
	free(p);
	return need;
}

gv_device* gv_device_new(void* instance, void* device) {
	gv_gdpa_t gdpa = (gv_gdpa_t)gv_gipa(instance, "vkGetDeviceProcAddr");
	if (gdpa == NULL) return NULL;
	gv_device* d = calloc(1, sizeof(gv_device));
	if (d == NULL) return NULL;
	d->device = device;
#define GV_LOAD(field, name) d->field = (void*)gdpa(device, name); if (d->field == NULL) { free(d); return NULL; }
	GV_LOAD(ResetFences, "vkResetFences");
	GV_LOAD(GetFenceStatus, "vkGetFenceStatus");
	GV_LOAD(WaitForFences, "vkWaitForFences");
	GV_LOAD(ResetCommandBuffer, "vkResetCommandBuffer");
	GV_LOAD(BeginCommandBuffer, "vkBeginCommandBuffer");
	GV_LOAD(EndCommandBuffer, "vkEndCommandBuffer");
	GV_LOAD(CmdCopyBuffer, "vkCmdCopyBuffer");
	GV_LOAD(CmdFillBuffer, "vkCmdFillBuffer");
	GV_LOAD(CmdUpdateBuffer, "vkCmdUpdateBuffer");
	GV_LOAD(CmdPipelineBarrier, "vkCmdPipelineBarrier");
	GV_LOAD(QueueSubmit, "vkQueueSubmit");
	GV_LOAD(CmdBindPipeline, "vkCmdBindPipeline");
	GV_LOAD(CmdPushConstants, "vkCmdPushConstants");
	GV_LOAD(CmdDispatch, "vkCmdDispatch");
	GV_LOAD(CreateShaderModule, "vkCreateShaderModule");
	GV_LOAD(DestroyShaderModule, "vkDestroyShaderModule");
	GV_LOAD(CreatePipelineLayout, "vkCreatePipelineLayout");
	GV_LOAD(DestroyPipelineLayout, "vkDestroyPipelineLayout");
	GV_LOAD(CreateComputePipelines, "vkCreateComputePipelines");
	GV_LOAD(DestroyPipeline, "vkDestroyPipeline");
	GV_LOAD(CreateBuffer, "vkCreateBuffer");
	GV_LOAD(DestroyBuffer, "vkDestroyBuffer");
	GV_LOAD(GetBufferMemoryRequirements, "vkGetBufferMemoryRequirements");
	GV_LOAD(AllocateMemory, "vkAllocateMemory");
	GV_LOAD(FreeMemory, "vkFreeMemory");
	GV_LOAD(BindBufferMemory, "vkBindBufferMemory");
	GV_LOAD(MapMemory, "vkMapMemory");
#undef GV_LOAD
	d->GetBufferDeviceAddress = (void*)gdpa(device, "vkGetBufferDeviceAddress");
	for (int i = 0; i < GV_MAX_QUEUES; i++) pthread_mutex_init(&d->qlock[i], NULL);
	return d;
}

void gv_device_free(gv_device* d) {
	if (d == NULL) return;
	for (int i = 0; i < GV_MAX_QUEUES; i++) pthread_mutex_destroy(&d->qlock[i]);
	free(d);
}

#define ACCESS_TRANSFER_READ 0x800u
#define ACCESS_TRANSFER_WRITE 0x1000u
#define ACCESS_HOST_READ 0x2000u
#define ACCESS_SHADER_RW (0x20u | 0x40u)
#define STAGE_TRANSFER 0x1000u
#define STAGE_COMPUTE 0x800u
#define STAGE_HOST 0x4000u
#define ST_MEMORY_BARRIER 46u
#define ST_BEGIN_INFO 42u
#define ST_SUBMIT_INFO 4u

static void gv_barrier(gv_device* d, void* cmd, uint32_t srcStage, uint32_t dstStage, uint32_t src, uint32_t dst) {
	gv_mem_barrier b = {ST_MEMORY_BARRIER, NULL, src, dst};
	d->CmdPipelineBarrier(cmd, srcStage, dstStage, 0, 1, &b, 0, NULL, 0, NULL);
}

void gv_record_dispatch(gv_device* d, void* cmd, const gv_op* op, const void* data);

int32_t gv_submit(gv_device* d, int q, int transfer_only, void* queue, void* cmd, uint64_t fence,
                  const gv_op* ops, int n, const void* data,
                  uint64_t wait_sem, uint32_t wait_stage, uint64_t signal_sem) {
	if (q < 0 || q >= GV_MAX_QUEUES) return -3; /* VK_ERROR_INITIALIZATION_FAILED */
	int32_t r = d->ResetFences(d->device, 1, &fence);
	if (r != 0) return r;
	r = d->ResetCommandBuffer(cmd, 0);
	if (r != 0) return r;
	gv_begin_info bi = {ST_BEGIN_INFO, NULL, 1 /* ONE_TIME_SUBMIT */, NULL};
	r = d->BeginCommandBuffer(cmd, &bi);
	if (r != 0) return r;
	for (int i = 0; i < n; i++) {
		const gv_op* op = &ops[i];
		switch (op->kind) {
		case GV_OP_COPY: {
			gv_copy_region reg = {op->src_off, op->dst_off, op->size};
			d->CmdCopyBuffer(cmd, op->src, op->dst, 1, &reg);
			break;
		}
		case GV_OP_FILL:
			d->CmdFillBuffer(cmd, op->dst, op->dst_off, op->size, op->value);
			break;
		case GV_OP_UPDATE:
			d->CmdUpdateBuffer(cmd, op->dst, op->dst_off, op->size, (const char*)data + op->data_off);
			break;
		case GV_OP_DISPATCH:
			gv_record_dispatch(d, cmd, op, data);
			break;
		case GV_OP_BARRIER: {
			// A transfer-only queue may not name the compute stage.
			uint32_t st = transfer_only ? STAGE_TRANSFER : (STAGE_TRANSFER | STAGE_COMPUTE);
			uint32_t acc = transfer_only ? 0 : ACCESS_SHADER_RW;
			gv_barrier(d, cmd, st, st, ACCESS_TRANSFER_WRITE | acc, ACCESS_TRANSFER_READ | ACCESS_TRANSFER_WRITE | acc);
			break;
		}
		}
	}
	// Make the device's writes visible to the host before the fence signals.
	gv_barrier(d, cmd, transfer_only ? STAGE_TRANSFER : (STAGE_TRANSFER | STAGE_COMPUTE), STAGE_HOST,
	           ACCESS_TRANSFER_WRITE | (transfer_only ? 0 : ACCESS_SHADER_RW), ACCESS_HOST_READ);
	r = d->EndCommandBuffer(cmd);
	if (r != 0) return r;
	gv_submit_info si;
	memset(&si, 0, sizeof(si));
	si.sType = ST_SUBMIT_INFO;
	si.cmdCount = 1;
	si.cmds = &cmd;
	if (wait_sem != 0) {
		si.waitCount = 1;
		si.waits = &wait_sem;
		si.waitStages = &wait_stage;
	}
	if (signal_sem != 0) {
		si.signalCount = 1;
		si.signals = &signal_sem;
	}
	pthread_mutex_t* lock = &d->qlock[d->shared_queue && q < 2 ? 0 : q];
	pthread_mutex_lock(lock);
	r = d->QueueSubmit(queue, 1, &si, fence);
	pthread_mutex_unlock(lock);
	return r;
}

static uint64_t gv_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// gv_wait polls the fence for the first 200 µs (a blocking wait costs about
// 25 µs more than polling on a short transfer), then blocks.
int32_t gv_wait(gv_device* d, uint64_t fence, uint64_t timeout_ns) {
	uint64_t start = gv_now();
	for (;;) {
		int32_t r = d->GetFenceStatus(d->device, fence);
		if (r != 1 /* VK_NOT_READY */) return r;
		uint64_t el = gv_now() - start;
		if (el > 200000) break;
	}
	uint64_t el = gv_now() - start;
	if (el >= timeout_ns) return 2; // VK_TIMEOUT
	return d->WaitForFences(d->device, 1, &fence, 1, timeout_ns - el);
}

// gv_fence_status is vkGetFenceStatus: VK_SUCCESS once signalled,
// VK_NOT_READY before, an error if the device was lost.
int32_t gv_fence_status(gv_device* d, uint64_t fence) {
	return d->GetFenceStatus(d->device, fence);
}

// Allocation is made here rather than through the Go bindings, which copy
// each create info into C memory they never free (about 170 bytes an
// allocation).
typedef struct {
	uint32_t sType; const void* pNext; uint32_t flags;
	uint64_t size; uint32_t usage, sharingMode, familyCount; const uint32_t* families;
} gv_buffer_info;
typedef struct { uint64_t size, alignment; uint32_t typeBits; } gv_mem_reqs;
typedef struct { uint32_t sType; const void* pNext; uint64_t size; uint32_t type; } gv_alloc_info;
#define ST_BUFFER_INFO 12u
#define ST_ALLOC_INFO 5u

int32_t gv_allocate(gv_device* d, uint64_t size, uint32_t type, uint32_t usage, uint32_t nfam,
                    const uint32_t* fams, int bda, int map, gv_memory* out, int* step) {
	memset(out, 0, sizeof(*out));
	gv_buffer_info bi = {ST_BUFFER_INFO, NULL, 0, size, usage, 0, 0, NULL};
	if (nfam > 1) {
		bi.sharingMode = 1; // VK_SHARING_MODE_CONCURRENT
		bi.familyCount = nfam;
		bi.families = fams;
	}
	uint64_t buf = 0, mem = 0;
	*step = GV_ALLOC_BUFFER;
	int32_t r = d->CreateBuffer(d->device, &bi, NULL, &buf);
	if (r != 0) return r;
	gv_mem_reqs req;
	memset(&req, 0, sizeof(req));
	d->GetBufferMemoryRequirements(d->device, buf, &req);
	if ((req.typeBits & (1u << type)) == 0) {
		d->DestroyBuffer(d->device, buf, NULL);
		*step = GV_ALLOC_TYPE;
		return -1;
	}
	gv_alloc_info ai = {ST_ALLOC_INFO, bda ? gv_alloc_flags() : NULL, req.size, type};
	*step = GV_ALLOC_MEMORY;
	r = d->AllocateMemory(d->device, &ai, NULL, &mem);
	if (r != 0) {
		d->DestroyBuffer(d->device, buf, NULL);
		return r;
	}
	*step = GV_ALLOC_BIND;
	r = d->BindBufferMemory(d->device, buf, mem, 0);
	void* ptr = NULL;
	if (r == 0 && map) {
		*step = GV_ALLOC_MAP;
		r = d->MapMemory(d->device, mem, 0, size, 0, &ptr);
	}
	if (r != 0) {
		d->DestroyBuffer(d->device, buf, NULL);
		d->FreeMemory(d->device, mem, NULL);
		return r;
	}
	out->mem = (void*)(uintptr_t)mem;
	out->buf = (void*)(uintptr_t)buf;
	out->ptr = ptr;
	out->addr = bda ? gv_buffer_address(d, buf) : 0;
	return 0;
}
