import CCurl
import Hashing

/// libcurl's process-wide state and the small conversions every caller needs.
enum Curl {
    /// `curl_global_init`, once per process, after libcrypto has been initialised our way: curl
    /// initialises OpenSSL too, and whichever does it first decides whether OpenSSL tears itself
    /// down in an `atexit` handler (see `LibCrypto` — it must not).
    private static let initialised: Bool = {
        LibCrypto.prepare()
        return curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// Initialises libcurl once (thread-safe: a Swift global's initialiser runs once).
    static func prepare() {
        precondition(initialised, "curl_global_init failed")
    }

    /// curl's text for `code`.
    static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}
