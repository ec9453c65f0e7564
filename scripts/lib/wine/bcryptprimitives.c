/* A test shim for wine < 9 only (never shipped): Rust's std (1.78+) takes its random bytes
 * from ProcessPrng in bcryptprimitives.dll, which Windows 10+ has and Debian 12's wine 8
 * lacks. scripts/suites/70-platforms.sh builds this with zig into the test's own wine
 * prefix; it answers from RtlGenRandom (advapi32's SystemFunction036), which wine has. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
