import CCurl
import Glibc

/// One request's life inside `OutboundClient`: its curl easy handle, the response as it arrives,
/// and the completion to call exactly once.
///
/// `@unchecked Sendable`: created by `send` and handed to the client's queue; after that every
/// member is used on that queue only (the curl callbacks run inside `curl_multi_socket_action`,
/// which runs there too).
final class Transfer: @unchecked Sendable {
    enum State {
        /// Made by `send`; not yet seen by the queue.
        case created
        /// In the client's FIFO, waiting for a running slot.
        case waiting
        /// Added to the multi handle.
        case running
        /// Completed (its completion has been called).
        case finished
    }

    /// What is sent: an HTTP request or an SMTP submission.
    enum Payload {
        case http(OutboundRequest)
        case mail(OutboundMail)

        var url: String {
            switch self {
            case .http(let request): request.url
            case .mail(let mail): mail.url
            }
        }

        var timeout: Duration? {
            switch self {
            case .http(let request): request.timeout
            case .mail(let mail): mail.timeout
            }
        }

        /// The request's own connect timeout (mail has none).
        var connectTimeout: Duration? {
            switch self {
            case .http(let request): request.connectTimeout
            case .mail: nil
            }
        }
    }

    let payload: Payload
    var state = State.created
    /// Set by the cancellation handler; a transfer not yet submitted completes `.cancelled` when it is.
    var cancelRequested = false
    private var completion: (@Sendable (Result<OutboundResponse, OutboundError>) -> Void)?

    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// SMTP: the `RCPT TO` list, and how much of the message curl has read.
    private var recipientList: UnsafeMutablePointer<curl_slist>?
    private var uploadOffset = 0
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    private var limits = OutboundLimits()
    private var policy = DestinationPolicy()
    /// The client's record of its connections' sockets (set with the handle).
    private var sockets: SocketLedger?
    private var headers: [HTTPField] = []
    private var headerBytes = 0
    private var body: [UInt8] = []
    /// The limit a callback found exceeded (it then returned a short count, so curl failed the transfer).
    private var exceededLimit: Int?
    /// The address the open-socket callback refused, when it did.
    private var refusal: OutboundError.Refusal?

    init(_ payload: Payload) {
        self.payload = payload
        errorBuffer.initialize(to: 0)
    }

    deinit {
        precondition(easy == nil, "a transfer's easy handle is released before the transfer")
        errorBuffer.deallocate()
    }

    /// Takes the completion to call when it finishes (on the queue, when submitted).
    func accept(_ completion: @escaping @Sendable (Result<OutboundResponse, OutboundError>) -> Void) {
        self.completion = completion
    }

    /// Calls the completion with `result`, once; releases the easy handle if there is one.
    func complete(_ result: Result<OutboundResponse, OutboundError>) {
        guard state != .finished else { return }
        state = .finished
        releaseHandle()
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }

    // MARK: Setting up

    /// Configures an easy handle (after `validate` passed): `spare`, a handle an earlier transfer
    /// finished with (`curl_easy_reset` clears every option it set), or a new one; throws when curl
    /// refuses (the handle is then freed).
    func makeHandle(
        limits: OutboundLimits, policy: DestinationPolicy, caFile: String?, sockets: SocketLedger, spare: UnsafeMutableRawPointer? = nil
    ) throws(OutboundError) -> UnsafeMutableRawPointer {
        self.limits = limits
        self.policy = policy
        self.sockets = sockets
        if let spare { curl_easy_reset(spare) }
        guard let easy = spare ?? curl_easy_init() else {
            throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_easy_init failed")
        }
        self.easy = easy
        do {
            try configure(easy, caFile: caFile)
        } catch {
            releaseHandle()
            throw error
        }
        return easy
    }

    /// Throws what makes the request unsendable under `policy` before anything is queued or
    /// connected: an unparsable URL, a scheme the policy refuses, an invalid header field.
    /// An SMTP mail: `smtp` or `smtps`, valid envelope paths, at least one recipient.
    func validate(policy: DestinationPolicy) throws(OutboundError) {
        let scheme = try Self.scheme(of: payload.url)
        switch payload {
        case .http(let request):
            guard scheme == "https" || (scheme == "http" && policy.allowPlainHTTP) else {
                throw .destinationRefused(.scheme(scheme))
            }
            for field in request.headers where !field.isValid {
                throw .invalidRequest("header field \(field.name.debugDescription) is not a valid name and value")
            }
        case .mail(let mail):
            guard scheme == "smtp" || scheme == "smtps" else { throw .destinationRefused(.scheme(scheme)) }
            guard !mail.recipients.isEmpty else { throw .invalidRequest("a mail needs at least one recipient") }
            for path in [mail.from] + mail.recipients where !OutboundMail.isValidPath(path) {
                throw .invalidRequest("\(path.debugDescription) is not a valid SMTP path")
            }
        }
    }

    /// The URL's scheme, lower-cased, as curl parses it.
    private static func scheme(of url: String) throws(OutboundError) -> String {
        guard let handle = curl_url() else { throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_url failed") }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else {
            throw .invalidRequest("not an absolute URL: \(url.debugDescription)")
        }
        var part: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_SCHEME, &part, 0) == CURLUE_OK, let part else {
            throw .invalidRequest("no scheme in \(url.debugDescription)")
        }
        defer { curl_free(part) }
        return String(cString: part).lowercased()
    }

    private func configure(_ easy: UnsafeMutableRawPointer, caFile: String?) throws(OutboundError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(easy, CURLOPT_ERRORBUFFER, pointer: UnsafeRawPointer(errorBuffer))
        try set(easy, CURLOPT_NOSIGNAL, 1)
        try set(easy, CURLOPT_URL, string: payload.url)
        // No proxy from the environment: the address check must see the destination's address,
        // not a proxy's. No redirects (curl's default).
        try set(easy, CURLOPT_PROXY, string: "")
        try set(easy, CURLOPT_FOLLOWLOCATION, 0)
        try set(easy, CURLOPT_SSL_VERIFYPEER, 1)
        try set(easy, CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile { try set(easy, CURLOPT_CAINFO, string: caFile) }
        try set(easy, CURLOPT_TCP_KEEPALIVE, 1)
        try set(easy, CURLOPT_MAXAGE_CONN, Int(limits.maxIdleConnectionAge.components.seconds))
        try set(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(payload.connectTimeout ?? limits.connectTimeout))
        try set(easy, CURLOPT_TIMEOUT_MS, Self.milliseconds(payload.timeout ?? limits.totalTimeout))
        try check(chronir_curl_easy_setopt_opensocket_callback(easy, CURLOPT_OPENSOCKETFUNCTION, openSocketCallback), "OPENSOCKETFUNCTION")
        try set(easy, CURLOPT_OPENSOCKETDATA, pointer: me)
        if let sockets {
            try check(
                chronir_curl_easy_setopt_closesocket_callback(easy, CURLOPT_CLOSESOCKETFUNCTION, closeSocketCallback), "CLOSESOCKETFUNCTION"
            )
            try set(easy, CURLOPT_CLOSESOCKETDATA, pointer: UnsafeRawPointer(Unmanaged.passUnretained(sockets).toOpaque()))
        }
        switch payload {
        case .http(let request): try configureHTTP(easy, request)
        case .mail(let mail): try configureMail(easy, mail)
        }
    }

    private func configureMail(_ easy: UnsafeMutableRawPointer, _ mail: OutboundMail) throws(OutboundError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(easy, CURLOPT_PROTOCOLS_STR, string: "smtp,smtps")
        // TLS or nothing: on smtp:// STARTTLS is required, a server without it fails the transfer.
        try set(easy, CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))
        try set(easy, CURLOPT_MAIL_FROM, string: "<\(mail.from)>")
        for recipient in mail.recipients {
            guard let appended = curl_slist_append(recipientList, "<\(recipient)>") else {
                throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
            }
            recipientList = appended
        }
        try set(easy, CURLOPT_MAIL_RCPT, pointer: UnsafeRawPointer(recipientList))
        if let username = mail.username {
            try set(easy, CURLOPT_USERNAME, string: username)
            try set(easy, CURLOPT_PASSWORD, string: mail.password ?? "")
        }
        try set(easy, CURLOPT_UPLOAD, 1)
        try set(easy, CURLOPT_INFILESIZE_LARGE, size: mail.message.count)
        try check(chronir_curl_easy_setopt_read_callback(easy, CURLOPT_READFUNCTION, readCallback), "READFUNCTION")
        try set(easy, CURLOPT_READDATA, pointer: me)
        // SMTP answers have no body; a server that talks too much is cut off by the header limit.
        try check(chronir_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, bodyCallback), "WRITEFUNCTION")
        try set(easy, CURLOPT_WRITEDATA, pointer: me)
    }

    private func configureHTTP(_ easy: UnsafeMutableRawPointer, _ request: OutboundRequest) throws(OutboundError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Only the schemes the policy allows.
        try set(easy, CURLOPT_PROTOCOLS_STR, string: policy.allowPlainHTTP ? "http,https" : "https")
        switch request.httpVersion {
        case .http2WhereNegotiated: try set(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: try set(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        case .http1_1: try set(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        }
        // Wait for a connection being set up to the same host to say whether it multiplexes,
        // rather than opening another one: HTTP/2 transfers then share one connection.
        try set(easy, CURLOPT_PIPEWAIT, 1)
        // A Content-Length over the limit fails before the body is read (CURLE_FILESIZE_EXCEEDED).
        try set(easy, CURLOPT_MAXFILESIZE_LARGE, size: limits.maxResponseBodyBytes)

        try check(chronir_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, bodyCallback), "WRITEFUNCTION")
        try set(easy, CURLOPT_WRITEDATA, pointer: me)
        try check(chronir_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback), "HEADERFUNCTION")
        try set(easy, CURLOPT_HEADERDATA, pointer: me)

        try setMethodAndBody(easy, request)
        var lines = request.headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        // "Name:" removes a header curl would add: its 100-continue dance for large bodies, and its
        // form-encoded Content-Type for POST bodies when the caller set none.
        lines.append("Expect:")
        if request.headers.value(of: "content-type") == nil { lines.append("Content-Type:") }
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
            }
            headerList = appended
        }
        try set(easy, CURLOPT_HTTPHEADER, pointer: UnsafeRawPointer(headerList))
    }

    private func setMethodAndBody(_ easy: UnsafeMutableRawPointer, _ request: OutboundRequest) throws(OutboundError) {
        switch request.method {
        case .get where request.body.isEmpty:
            try set(easy, CURLOPT_HTTPGET, 1)
            return
        case .head:
            try set(easy, CURLOPT_NOBODY, 1)
            return
        case .post:
            break
        default:
            try set(easy, CURLOPT_CUSTOMREQUEST, string: request.method.rawValue)
            if request.body.isEmpty { return }
        }
        try set(easy, CURLOPT_POSTFIELDSIZE_LARGE, size: request.body.count)
        // COPYPOSTFIELDS copies during the call, so the array's storage need not outlive it.
        let code = request.body.withUnsafeBytes { bytes in
            chronir_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, bytes.baseAddress ?? UnsafeRawPointer(errorBuffer))
        }
        try check(code, "COPYPOSTFIELDS")
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) throws(OutboundError) {
        try check(chronir_curl_easy_setopt_long(easy, option, value), "option \(option.rawValue)")
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CURLoption, size: Int) throws(OutboundError) {
        try check(chronir_curl_easy_setopt_off_t(easy, option, curl_off_t(size)), "option \(option.rawValue)")
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CURLoption, string: String) throws(OutboundError) {
        // curl copies string options (since 7.17), so the temporary C string may go.
        try check(chronir_curl_easy_setopt_pointer(easy, option, string), "option \(option.rawValue)")
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CURLoption, pointer: UnsafeRawPointer?) throws(OutboundError) {
        try check(chronir_curl_easy_setopt_pointer(easy, option, pointer), "option \(option.rawValue)")
    }

    private func check(_ code: CURLcode, _ what: String) throws(OutboundError) {
        guard code == CURLE_OK else { throw .other(code: Int(code.rawValue), message: "curl refused \(what): \(Curl.describe(code))") }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1_000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    // MARK: Callbacks (inside curl_multi_socket_action, on the queue)

    /// One line of a response head (status line, field, or the empty line ending it).
    func receivedHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        headerBytes += bytes.count
        guard headerBytes <= limits.maxResponseHeaderBytes else {
            exceededLimit = limits.maxResponseHeaderBytes
            return false
        }
        var line = Substring(decoding: bytes, as: UTF8.self)
        while let last = line.last, last == "\r\n" || last == "\n" || last == "\r" { line.removeLast() }
        if line.hasPrefix("HTTP/") {
            headers = []  // a new head: an interim 1xx response's fields are not the final one's
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            headers.append(HTTPField(name: name, value: value))
        }
        return true
    }

    /// Copies the next piece of the mail's message into `buffer`; 0 at its end.
    func readUpload(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard case .mail(let mail) = payload else { return 0 }
        let count = min(buffer.count, mail.message.count - uploadOffset)
        guard count > 0 else { return 0 }
        mail.message.withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + uploadOffset, byteCount: count)
        }
        uploadOffset += count
        return count
    }

    /// A piece of the response body.
    func receivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= limits.maxResponseBodyBytes else {
            exceededLimit = limits.maxResponseBodyBytes
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    /// The socket curl asks for, if the policy allows its address: the SSRF check, on the address
    /// actually about to be connected (after DNS, for every address curl tries).
    func openSocket(purpose: curlsocktype, address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
        // `addr` is declared as a 16-byte sockaddr but curl stores the whole sockaddr_in6 there.
        let sockaddr = UnsafeRawPointer(address) + offset
        // Only IP connections are ever asked for (no Unix sockets, no FTP); anything else fails.
        guard purpose == CURLSOCKTYPE_IPCXN, let ip = IPAddress(sockaddr: sockaddr, length: Int(address.pointee.addrlen)) else {
            return CURL_SOCKET_BAD
        }
        guard policy.allows(ip) else {
            refusal = .address(ip, AddressClass.of(ip))
            return CURL_SOCKET_BAD
        }
        let made = socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        sockets?.opened(made)
        return made
    }

    // MARK: Finishing

    /// The result of the transfer curl finished with `code` (call after removing it from the multi).
    func result(of code: CURLcode) -> Result<OutboundResponse, OutboundError> {
        guard let easy else { return .failure(.other(code: Int(code.rawValue), message: "no handle")) }
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var status = 0
        _ = chronir_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = chronir_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        var connects = 0
        _ = chronir_curl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        let responseVersion: OutboundResponse.Version =
            switch version {
            case CURL_HTTP_VERSION_1_0: .http1_0
            case CURL_HTTP_VERSION_2_0: .http2
            case CURL_HTTP_VERSION_3: .http3
            default: .http1_1
            }
        return .success(
            OutboundResponse(status: status, headers: headers, body: body, httpVersion: responseVersion, newConnections: connects))
    }

    private func error(for code: CURLcode) -> OutboundError {
        let message = errorBuffer.pointee == 0 ? Curl.describe(code) : String(cString: errorBuffer)
        if let exceededLimit { return .responseTooLarge(limitBytes: exceededLimit) }
        if case .mail = payload, let easy {
            // The server's last reply: a 4xx/5xx to AUTH, MAIL, RCPT or DATA (RFC 5321 §4.2).
            var reply = 0
            _ = chronir_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &reply)
            if (400..<600).contains(reply) { return .mailRefused(replyCode: reply, message: message) }
        }
        switch code {
        case CURLE_FILESIZE_EXCEEDED: return .responseTooLarge(limitBytes: limits.maxResponseBodyBytes)
        case CURLE_OPERATION_TIMEDOUT: return .timeout
        case CURLE_COULDNT_CONNECT where refusal != nil: return .destinationRefused(refusal!)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT: return .connectFailed(message)
        case CURLE_UNSUPPORTED_PROTOCOL: return .destinationRefused(.scheme(message))
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            return .tls(message)
        default: return .other(code: Int(code.rawValue), message: message)
        }
    }

    /// Takes the easy handle out of the transfer for reuse by the next one (after
    /// `curl_multi_remove_handle` and after `result(of:)` read it), freeing the lists it pointed to;
    /// `complete` then has no handle to free.
    func takeHandle() -> UnsafeMutableRawPointer? {
        let handle = easy
        easy = nil
        releaseHandle()
        return handle
    }

    /// Frees the easy handle and header list (after `curl_multi_remove_handle` if it was added).
    func releaseHandle() {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        if let recipientList { curl_slist_free_all(recipientList) }
        recipientList = nil
    }
}

/// CURLOPT_WRITEFUNCTION: a piece of the body; returning less than given makes curl fail the transfer.
private let bodyCallback: curl_write_callback = { data, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    return transfer.receivedBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// CURLOPT_READFUNCTION: the next piece of an SMTP message.
private let readCallback: curl_read_callback = { buffer, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.readUpload(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

/// CURLOPT_HEADERFUNCTION: one header line.
private let headerCallback: curl_write_callback = { data, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    return transfer.receivedHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// CURLOPT_OPENSOCKETFUNCTION: the SSRF check.
private let openSocketCallback: curl_opensocket_callback = { context, purpose, address in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.openSocket(purpose: purpose, address: address!)
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
