/* A stand-in for libwarpline-inject.so whose libcupti cannot be found (see missingcupti.c). */
int warpline_stub_cupti_symbol(void);
int warpline_record_workload(const void* request) {
    (void)request;
    return warpline_stub_cupti_symbol();
}
