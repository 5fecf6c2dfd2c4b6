// The NVTX half of libwarpline-inject.so: NVTX_INJECTION64_PATH points here, for programs
// (warpline-record -- PROGRAM) and for the bundled workloads.
//
// InitializeInjectionNvtx2 hands NVTX's core API (ranges, marks, domains, names) to the CUPTI
// this library is bound to, which turns it into MARKER records. A program like PyTorch may already
// have loaded its own copy of libcupti; pointing NVTX at a CUPTI by path could then reach a second
// copy that records nothing (the reason torch.cuda.nvtx ranges went missing), so we hand NVTX to
// the copy that records.
//
// InitializeInjectionNvtxExtension: NVTX's payload extension (nvToolsExtPayload.h) has its own
// range calls, which CUPTI does not record. NCCL opens a range with the core nvtxDomainRangePushEx
// and, when it has attached a payload, closes it with the extension's nvtxRangePopPayload: every
// ncclCommInitRank and ncclCommFinalize range stayed open to the end of the trace. The payload
// range calls are answered here by the same core calls without the payload (push, pop, start,
// end), which CUPTI records; anything else in an extension stays with CUPTI.

#include "cuptisession.h"

#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

namespace {

// The function `name` of the CUPTI this library is bound to.
template <typename Fn> Fn boundCuptiSymbol(const char* name) {
    const std::string cupti = warpline::collector::CuptiSession::cuptiLibraryPath();
    if (cupti.empty())
        return nullptr;
    void* handle = dlopen(cupti.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!handle)
        return nullptr;
    Fn fn = reinterpret_cast<Fn>(dlsym(handle, name));
    dlclose(handle);
    return fn;
}

// The payload extension's range calls as core calls (through this library's own NVTX instance,
// which NVTX_INJECTION64_PATH attaches to CUPTI like the program's). The payload is dropped.
nvtxEventAttributes_t noMessage() {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return attributes;
}

int pushPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, size_t) {
    const nvtxEventAttributes_t attributes = noMessage();
    return nvtxDomainRangePushEx(domain, &attributes);
}

int popPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, size_t) {
    return nvtxDomainRangePop(domain);
}

nvtxRangeId_t startPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, size_t) {
    const nvtxEventAttributes_t attributes = noMessage();
    return nvtxDomainRangeStartEx(domain, &attributes);
}

void endPayload(nvtxDomainHandle_t domain, nvtxRangeId_t id, const nvtxPayloadData_t*, size_t) {
    nvtxDomainRangeEnd(domain, id);
}

} // namespace

extern "C" __attribute__((visibility("default"))) int
InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t)) {
    using Init = int (*)(const void* (*)(uint32_t));
    static const Init init = boundCuptiSymbol<Init>("InitializeInjectionNvtx2");
    return init ? init(getExportTable) : 0;
}

extern "C" __attribute__((visibility("default"))) int
InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module) {
    using Init = int (*)(nvtxExtModuleInfo_t*);
    static const Init init = boundCuptiSymbol<Init>("InitializeInjectionNvtxExtension");
    const int cupti = init ? init(module) : 0;
    if (!module || module->moduleId != NVTX_EXT_PAYLOAD_MODULEID || module->segmentsCount < 1 ||
        !module->segments || !module->segments[0].functionSlots)
        return cupti;
    nvtxExtModuleSegment_t& segment = module->segments[0];
    const auto answer = [&segment](size_t cbid, auto function) {
        if (cbid < segment.slotCount)
            segment.functionSlots[cbid] = reinterpret_cast<intptr_t>(function);
    };
    answer(NVTX3EXT_CBID_nvtxRangePushPayload, &pushPayload);
    answer(NVTX3EXT_CBID_nvtxRangePopPayload, &popPayload);
    answer(NVTX3EXT_CBID_nvtxRangeStartPayload, &startPayload);
    answer(NVTX3EXT_CBID_nvtxRangeEndPayload, &endPayload);
    return 1;
}
