import COpenSSL

/// libcrypto's process-wide setup. Every entry point of this module passes through `prepare()`, and
/// so does `PostgresConnection` before libpq (which links OpenSSL for TLS) first connects: whichever
/// initialises libcrypto first decides how it ends.
///
/// Contract: libcrypto is initialised with `OPENSSL_INIT_NO_ATEXIT`, so OpenSSL does not tear itself
/// down in an `atexit` handler. Its documentation requires `OPENSSL_cleanup` to be the last OpenSSL
/// call in the process, which a server cannot promise at `exit()`: Dispatch worker threads may still
/// be hashing, and a worker that finishes after the cleanup finds the thread-exit destructor gone, so
/// its per-thread state (the public and private DRBGs of `RAND_bytes`, the error queue) is orphaned —
/// the intermittent LeakSanitizer report "CRYPTO_zalloc" at the end of the ASan test run was exactly
/// that. Without the cleanup the kernel reclaims everything at exit, and exiting threads still free
/// their own state through the destructor key, which now stays valid.
public enum LibCrypto {
    private static let initialised: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1

    /// Initialises libcrypto once (thread-safe; later calls cost one `swift_once` check).
    public static func prepare() {
        guard initialised else { fatalOpenSSLError("OPENSSL_init_crypto") }
    }
}
