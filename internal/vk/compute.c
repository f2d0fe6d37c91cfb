// Compute kernels: the feature query, device addresses, pipelines and the
// dispatch command. Kernels reach memory through buffer device addresses
// passed in push constants, so a pipeline needs no descriptor sets: its
// layout is one push-constant range.
#include <stdlib.h>
#include <string.h>
#include "native_internal.h"

// Structure types and flags from the Vulkan specification.
#define ST_FEATURES2 1000059000u
#define ST_BDA_FEATURES 1000257000u
#define ST_ALLOC_FLAGS 1000060000u
#define ST_BDA_INFO 1000244001u
#define ST_SHADER_MODULE 16u
#define ST_SHADER_STAGE 18u
#define ST_COMPUTE_PIPELINE 29u
#define ST_PIPELINE_LAYOUT 30u
#define STAGE_COMPUTE_BIT 0x20u
#define BIND_POINT_COMPUTE 1u
#define ALLOC_DEVICE_ADDRESS 0x2u

typedef struct { uint32_t sType; void* pNext; uint32_t bda, capture, multi; } gv_bda_feat;
typedef struct { uint32_t sType; const void* pNext; uint32_t flags, mask; } gv_alloc_flags_info;
typedef struct { uint32_t sType; const void* pNext; uint64_t buffer; } gv_bda_info;
// VkPhysicalDeviceFeatures is 55 VkBool32s; the room is generous.
typedef struct { uint32_t sType; void* pNext; uint32_t core[64]; } gv_features2;

int gv_query_features(void* instance, void* phys, gv_features* out) {
	memset(out, 0, sizeof(*out));
	typedef void (*fn_t)(void*, void*);
	fn_t f = (fn_t)gv_gipa(instance, "vkGetPhysicalDeviceFeatures2");
	if (f == NULL) f = (fn_t)gv_gipa(instance, "vkGetPhysicalDeviceFeatures2KHR");
	if (f == NULL) return 0;
	gv_bda_feat bda;
	memset(&bda, 0, sizeof(bda));
	bda.sType = ST_BDA_FEATURES;
	gv_features2 f2;
	memset(&f2, 0, sizeof(f2));
	f2.sType = ST_FEATURES2;
	f2.pNext = &bda;
	f(phys, &f2);
	out->buffer_device_address = bda.bda != 0;
	return 1;
}

static gv_bda_feat gv_bda_on = {ST_BDA_FEATURES, NULL, 1, 0, 0};
static const gv_alloc_flags_info gv_alloc_bda = {ST_ALLOC_FLAGS, NULL, ALLOC_DEVICE_ADDRESS, 0};

const void* gv_bda_features(void) { return &gv_bda_on; }
const void* gv_alloc_flags(void) { return &gv_alloc_bda; }

int gv_device_has_bda(gv_device* d) { return d->GetBufferDeviceAddress != NULL; }

void gv_device_share_queue(gv_device* d) { d->shared_queue = 1; }

uint64_t gv_buffer_address(gv_device* d, uint64_t buffer) {
	if (d->GetBufferDeviceAddress == NULL) return 0;
	gv_bda_info info = {ST_BDA_INFO, NULL, buffer};
	return d->GetBufferDeviceAddress(d->device, &info);
}

struct gv_pipeline {
	uint64_t layout;
	uint64_t pipeline;
	uint32_t push;
};

typedef struct { uint32_t sType; const void* pNext; uint32_t flags; size_t codeSize; const uint32_t* pCode; } gv_module_info;
typedef struct { uint32_t stageFlags, offset, size; } gv_push_range;
typedef struct {
	uint32_t sType; const void* pNext; uint32_t flags;
	uint32_t setLayoutCount; const uint64_t* pSetLayouts;
	uint32_t pushCount; const gv_push_range* pPush;
} gv_layout_info;
typedef struct { uint32_t constantID, offset; size_t size; } gv_spec_entry;
typedef struct { uint32_t count; const gv_spec_entry* entries; size_t dataSize; const void* data; } gv_spec_info;
typedef struct {
	uint32_t sType; const void* pNext; uint32_t flags; uint32_t stage;
	uint64_t module; const char* pName; const gv_spec_info* spec;
} gv_stage_info;
typedef struct {
	uint32_t sType; const void* pNext; uint32_t flags;
	gv_stage_info stage;
	uint64_t layout; uint64_t base; int32_t baseIndex;
} gv_compute_info;

#define GV_MAX_SPEC 16

int32_t gv_pipeline_new(gv_device* d, const uint32_t* code, size_t size, uint32_t push,
                        const uint32_t* spec, uint32_t nspec, gv_pipeline** out) {
	*out = NULL;
	if (nspec > GV_MAX_SPEC) return -3; // VK_ERROR_INITIALIZATION_FAILED
	gv_pipeline* p = calloc(1, sizeof(gv_pipeline));
	if (p == NULL) return -1; // VK_ERROR_OUT_OF_HOST_MEMORY
	p->push = push;
	gv_module_info mi = {ST_SHADER_MODULE, NULL, 0, size, code};
	uint64_t module = 0;
	int32_t r = d->CreateShaderModule(d->device, &mi, NULL, &module);
	if (r != 0) {
		free(p);
		return r;
	}
	gv_push_range pr = {STAGE_COMPUTE_BIT, 0, push};
	gv_layout_info li = {ST_PIPELINE_LAYOUT, NULL, 0, 0, NULL, push > 0 ? 1u : 0u, &pr};
	r = d->CreatePipelineLayout(d->device, &li, NULL, &p->layout);
	if (r != 0) {
		d->DestroyShaderModule(d->device, module, NULL);
		free(p);
		return r;
	}
	gv_spec_entry entries[GV_MAX_SPEC];
	for (uint32_t i = 0; i < nspec; i++) {
		entries[i].constantID = i;
		entries[i].offset = i * 4;
		entries[i].size = 4;
	}
	gv_spec_info si = {nspec, entries, (size_t)nspec * 4, spec};
	gv_compute_info ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = ST_COMPUTE_PIPELINE;
	ci.stage.sType = ST_SHADER_STAGE;
	ci.stage.stage = STAGE_COMPUTE_BIT;
	ci.stage.module = module;
	ci.stage.pName = "main";
	ci.stage.spec = nspec > 0 ? &si : NULL;
	ci.layout = p->layout;
	ci.baseIndex = -1;
	r = d->CreateComputePipelines(d->device, 0, 1, &ci, NULL, &p->pipeline);
	// The pipeline keeps what it needs of the module.
	d->DestroyShaderModule(d->device, module, NULL);
	if (r != 0) {
		d->DestroyPipelineLayout(d->device, p->layout, NULL);
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

void gv_pipeline_free(gv_device* d, gv_pipeline* p) {
	if (p == NULL) return;
	d->DestroyPipeline(d->device, p->pipeline, NULL);
	d->DestroyPipelineLayout(d->device, p->layout, NULL);
	free(p);
}

void gv_record_dispatch(gv_device* d, void* cmd, const gv_op* op, const void* data) {
	const gv_pipeline* p = (const gv_pipeline*)(uintptr_t)op->src;
	d->CmdBindPipeline(cmd, BIND_POINT_COMPUTE, p->pipeline);
	if (op->size > 0) {
		d->CmdPushConstants(cmd, p->layout, STAGE_COMPUTE_BIT, 0, (uint32_t)op->size,
		                    (const char*)data + op->data_off);
	}
	d->CmdDispatch(cmd, op->groups[0], op->groups[1], op->groups[2]);
}
