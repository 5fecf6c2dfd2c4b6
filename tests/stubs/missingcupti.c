/* Test stand-ins for tst_recordcli's "CUPTI missing" case: libcupti.so.999 (built, never found at
 * run time: no rpath points at it and no system folder holds it) and a recorder library that
 * needs it, as libwarpline-inject.so needs the real libcupti. */
int warpline_stub_cupti_symbol(void) { return 0; }
