import CCurl
import Dispatch

/// The server's outbound HTTP and SMTP client (push providers, webhooks, mail; docs/notifications.md,
/// "Outbound HTTP"; docs/mail.md): one libcurl multi handle driven by Dispatch sources, so requests share a connection pool,
/// HTTP/2 connections carry many requests at once, and no thread blocks per request and no second
/// event loop runs.
///
/// Threading contract: everything curl-related — the multi handle, every easy handle, the socket
/// watches, the timer, the queue of waiting transfers — is owned by `queue`, a serial queue, and
/// touched only there (curl's callbacks run inside `curl_multi_socket_action`, called there).
/// `send` may be called from any task or thread; it hops to the queue. Completions run on the queue.
///
/// Lifetime: the client keeps itself alive (its timer holds it) until `close()`, which every owner
/// must call: it fails every pending request with `.closed`, removes the sources and frees the
/// handles.
///
/// Flow: `send` → FIFO (at most `maxQueuedTransfers`) → running (at most `maxConcurrentTransfers`,
/// added to the multi handle) → curl asks for sockets to be watched (`CURLMOPT_SOCKETFUNCTION` →
/// `SocketWatch`) and for a timeout (`CURLMOPT_TIMERFUNCTION` → one timer); their events call
/// `curl_multi_socket_action`, after which finished transfers are read with `curl_multi_info_read`.
public final class OutboundClient: @unchecked Sendable {
    // @unchecked: mutable state is confined to `queue` (dispatchPrecondition at each entry).

    /// What every request of one client shares.
    public struct Configuration: Sendable {
        /// The limits.
        public var limits: OutboundLimits
        /// Where connections may go.
        public var policy: DestinationPolicy
        /// A PEM file of CA certificates to verify servers with instead of the system's bundle (tests'
        /// private CA). Peer and host verification are always on.
        public var caFile: String?

        /// A configuration; the defaults are production's.
        public init(limits: OutboundLimits = OutboundLimits(), policy: DestinationPolicy = .publicHTTPSOnly, caFile: String? = nil) {
            self.limits = limits
            self.policy = policy
            self.caFile = caFile
        }
    }

    /// This client's configuration.
    public let configuration: Configuration
    /// The serial queue that owns the multi handle and everything below.
    private let queue = DispatchQueue(label: "chronir.outbound")
    private let multi: UnsafeMutableRawPointer
    private let timer: any DispatchSourceTimer
    private var watches: [curl_socket_t: SocketWatch] = [:]
    /// Its connections' sockets, whose closing curl reports (their watches are parked, not retired,
    /// between requests: `SocketWatch`).
    private let sockets = SocketLedger()
    private var running: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Easy handles finished transfers left for the next ones (at most `maxConcurrentTransfers`):
    /// `curl_easy_init` and `curl_easy_cleanup` per request were a large share of the client's
    /// allocations in a notification burst (Benchmarks/README.md, "Notifications: scheduler lag").
    private var spareHandles: [UnsafeMutableRawPointer] = []
    private var waiting: [Transfer] = []
    private var waitingStart = 0
    private var isClosed = false

    /// A client with `configuration`; call `close()` when done with it.
    public init(configuration: Configuration = Configuration()) {
        Curl.prepare()
        self.configuration = configuration
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.multi = multi
        timer = DispatchSource.makeTimerSource(queue: queue)
        sockets.willClose = { [weak self] socket in self?.closing(socket) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let limits = configuration.limits
        let codes = [
            chronir_curl_multi_setopt_socket_callback(multi, CURLMOPT_SOCKETFUNCTION, socketCallback),
            chronir_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me),
            chronir_curl_multi_setopt_timer_callback(multi, CURLMOPT_TIMERFUNCTION, timerCallback),
            chronir_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me),
            chronir_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX),
            chronir_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.maxConnectionsPerHost),
            chronir_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limits.maxIdleConnections),
        ]
        precondition(codes.allSatisfy { $0 == CURLM_OK }, "curl_multi_setopt failed: \(codes)")
        // Strong: the client lives until close() cancels the timer.
        timer.setEventHandler { self.socketAction(CURL_SOCKET_TIMEOUT, events: 0) }
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    /// Sends `request` and returns the response, whatever its status. Throws `.cancelled` when the
    /// calling task is cancelled (the transfer is stopped), `.closed` when the client closes first,
    /// and the error of the exchange otherwise.
    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        try await run(Transfer(.http(request)))
    }

    /// Submits `mail` over SMTP (STARTTLS or implicit TLS, never plain) and returns the server's
    /// final reply. Throws `.mailRefused` for a 4xx/5xx reply, `.tls` when TLS cannot be set up
    /// (STARTTLS not offered included), and otherwise as `send(_: OutboundRequest)`.
    public func send(_ mail: OutboundMail) async throws(OutboundError) -> MailReceipt {
        let response = try await run(Transfer(.mail(mail)))
        return MailReceipt(replyCode: response.status, newConnections: response.newConnections)
    }

    /// Sends every request of `requests` — at most `width` of them at once, the next started on the
    /// client's queue as one finishes — and returns their results in the order of `requests`. One
    /// hop to the queue for the whole batch and one resumption when its last transfer finishes: a
    /// dispatcher round's sends cost no task or thread switch each (docs/notifications.md#pipeline).
    /// Each request is admitted as `send` admits one (the client's own running and queue limits
    /// apply too). When the calling task is cancelled, every request not yet finished fails with
    /// `.cancelled`; `.closed` when the client closes first.
    public func send(_ requests: [OutboundRequest], width: Int) async -> [Result<OutboundResponse, OutboundError>] {
        await batch(width: width).results(adding: requests)
    }

    /// A batch `send(_:width:)` runs, whose requests are handed over while the caller still builds
    /// the rest (`OutboundBatch.add`): its first transfers start as soon as the first slice is added.
    public func batch(width: Int) -> OutboundBatch {
        OutboundBatch(client: self, batch: Batch(width: max(1, width)))
    }

    private func run(_ transfer: Transfer) async throws(OutboundError) -> OutboundResponse {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<OutboundResponse, OutboundError>, Never>) in
                queue.async { self.submit(transfer) { continuation.resume(returning: $0) } }
            }
        } onCancel: {
            queue.async { self.cancel(transfer) }
        }
        return try result.get()
    }

    /// Fails every request still pending with `.closed`, stops watching every socket, and frees
    /// the multi handle (closing pooled connections). Blocks until done; idempotent. Not on the
    /// client's queue (i.e. not from a completion).
    public func close() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        queue.sync {
            guard !isClosed else { return }
            isClosed = true
            for transfer in waiting[waitingStart...] { transfer.complete(.failure(.closed)) }
            waiting = []
            waitingStart = 0
            for (easy, transfer) in running {
                curl_multi_remove_handle(multi, easy)
                transfer.complete(.failure(.closed))
            }
            running = [:]
            for handle in spareHandles { curl_easy_cleanup(handle) }
            spareHandles = []
            curl_multi_cleanup(multi)  // may still report sockets removed (watch(_:what:))
            for watch in watches.values { watch.retire() }
            watches = [:]
            timer.cancel()
        }
    }

    /// Transfers running and waiting (for tests and metrics; from any thread but the client's queue).
    public var load: (running: Int, waiting: Int) {
        queue.sync { (running.count, waiting.count - waitingStart) }
    }

    // MARK: On the queue

    private func submit(_ transfer: Transfer, completion: @escaping @Sendable (Result<OutboundResponse, OutboundError>) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        transfer.accept(completion)
        if isClosed { return transfer.complete(.failure(.closed)) }
        if transfer.cancelRequested { return transfer.complete(.failure(.cancelled)) }
        do {
            try transfer.validate(policy: configuration.policy)
        } catch {
            return transfer.complete(.failure(error))
        }
        if running.count < configuration.limits.maxConcurrentTransfers {
            start(transfer)
        } else if waiting.count - waitingStart < configuration.limits.maxQueuedTransfers {
            transfer.state = .waiting
            waiting.append(transfer)
        } else {
            transfer.complete(.failure(.tooManyQueued))
        }
    }

    /// Adds `transfers` to `batch` and submits those its width lets start; `completion` (once the
    /// caller added the last) gets every result once the last has finished.
    fileprivate func append(
        _ transfers: [Transfer], to batch: Batch,
        completion: (@Sendable ([Result<OutboundResponse, OutboundError>]) -> Void)? = nil
    ) {
        dispatchPrecondition(condition: .onQueue(queue))
        batch.append(transfers)
        if let completion { batch.seal(completion) }
        if batch.cancelled { cancel(batch) } else { admit(batch) }
    }

    /// Submits `batch`'s next transfers while fewer than its width run. A transfer that completes
    /// at once (refused, client closed) frees its slot during the loop; the loop is not re-entered.
    private func admit(_ batch: Batch) {
        guard !batch.admitting else { return }
        batch.admitting = true
        defer { batch.admitting = false }
        while batch.inFlight < batch.width, batch.next < batch.transfers.count {
            let index = batch.next
            batch.next += 1
            batch.inFlight += 1
            submit(batch.transfers[index]) { [self] result in
                batch.finish(index, result)
                admit(batch)
            }
        }
    }

    /// Cancels every transfer of `batch` not yet finished: those not submitted complete `.cancelled`
    /// without being sent, those submitted are stopped as `cancel` stops one.
    fileprivate func cancel(_ batch: Batch) {
        dispatchPrecondition(condition: .onQueue(queue))
        batch.cancelled = true
        while batch.next < batch.transfers.count {
            let index = batch.next
            batch.next += 1
            batch.inFlight += 1
            batch.finish(index, .failure(.cancelled))
        }
        for transfer in batch.transfers where transfer.state != .finished && transfer.state != .created {
            cancel(transfer)
        }
    }

    private func start(_ transfer: Transfer) {
        let easy: UnsafeMutableRawPointer
        do {
            easy = try transfer.makeHandle(
                limits: configuration.limits, policy: configuration.policy, caFile: configuration.caFile, sockets: sockets,
                spare: spareHandles.popLast())
        } catch {
            return transfer.complete(.failure(error))
        }
        let code = curl_multi_add_handle(multi, easy)
        guard code == CURLM_OK else {
            return transfer.complete(.failure(.other(code: Int(code.rawValue), message: String(cString: curl_multi_strerror(code)))))
        }
        transfer.state = .running
        running[easy] = transfer
    }

    private func cancel(_ transfer: Transfer) {
        dispatchPrecondition(condition: .onQueue(queue))
        transfer.cancelRequested = true
        switch transfer.state {
        case .created, .finished:
            return  // submit() will see the flag / nothing left to stop
        case .waiting:
            if let index = waiting[waitingStart...].firstIndex(where: { $0 === transfer }) { waiting.remove(at: index) }
        case .running:
            if let easy = transfer.easy {
                running[easy] = nil
                curl_multi_remove_handle(multi, easy)
            }
        }
        transfer.complete(.failure(.cancelled))
        admitWaiting()
    }

    /// Starts waiting transfers while running slots are free.
    private func admitWaiting() {
        while running.count < configuration.limits.maxConcurrentTransfers, waitingStart < waiting.count {
            let next = waiting[waitingStart]
            waitingStart += 1
            start(next)
        }
        if waitingStart > 64 && waitingStart * 2 > waiting.count {
            waiting.removeFirst(waitingStart)
            waitingStart = 0
        }
    }

    /// Tells curl about an event on `socket` (or its timeout) and completes what finished.
    private func socketAction(_ socket: curl_socket_t, events: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isClosed else { return }
        var stillRunning: Int32 = 0
        _ = curl_multi_socket_action(multi, socket, events, &stillRunning)
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = running.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)  // the message is invalid from here on
            let result = transfer.result(of: code)
            if let handle = transfer.takeHandle() {
                if spareHandles.count < configuration.limits.maxConcurrentTransfers {
                    spareHandles.append(handle)
                } else {
                    curl_easy_cleanup(handle)
                }
            }
            transfer.complete(result)
        }
        admitWaiting()
    }

    /// CURLMOPT_SOCKETFUNCTION: watch `socket` for `what` (`CURL_POLL_*`). `CURL_POLL_REMOVE` parks
    /// the watch of one of the client's connections (curl reports its close: `closing`) and retires
    /// any other.
    fileprivate func watch(_ socket: curl_socket_t, what: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        if let existing = watches[socket] {
            if what == CURL_POLL_REMOVE && sockets.open.contains(socket) {
                return existing.update(read: false, write: false)
            }
            // A socket of the ledger cannot have been closed and its number reused unseen.
            if what == CURL_POLL_REMOVE || (!sockets.open.contains(socket) && !existing.isCurrent) {
                existing.retire()
                watches[socket] = nil
            }
        }
        guard what != CURL_POLL_REMOVE else { return }
        let watch: SocketWatch
        if let existing = watches[socket] {
            watch = existing
        } else {
            guard let made = SocketWatch(curlSocket: socket, queue: queue, onEvent: { self.socketAction(socket, events: $0) }) else {
                return
            }
            watch = made
            watches[socket] = made
        }
        watch.update(read: what & CURL_POLL_IN != 0, write: what & CURL_POLL_OUT != 0)
    }

    /// CURLOPT_CLOSESOCKETFUNCTION, through `sockets`: curl is about to close one of the client's
    /// connections; its watch goes with it.
    private func closing(_ socket: curl_socket_t) {
        dispatchPrecondition(condition: .onQueue(queue))
        watches.removeValue(forKey: socket)?.retire()
    }

    /// CURLMOPT_TIMERFUNCTION: call `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` in
    /// `milliseconds` (0: as soon as the queue gets to it — never from inside the callback), or
    /// never (-1).
    fileprivate func scheduleTimeout(milliseconds: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        timer.schedule(deadline: milliseconds < 0 ? .distantFuture : .now() + .milliseconds(milliseconds))
    }
}

private let socketCallback: curl_socket_callback = { _, socket, what, client, _ in
    Unmanaged<OutboundClient>.fromOpaque(client!).takeUnretainedValue().watch(socket, what: what)
    return 0
}

private let timerCallback: curl_multi_timer_callback = { _, milliseconds, client in
    Unmanaged<OutboundClient>.fromOpaque(client!).takeUnretainedValue().scheduleTimeout(milliseconds: milliseconds)
    return 0
}

/// A batch of requests handed to the client in slices (`OutboundClient.batch(width:)`): `add` each
/// slice as it is built — its transfers start at once while the batch's width allows — then
/// `results(adding:)` with the last, once, for every result in the order added. One hop to the
/// client's queue per call. When the task awaiting `results` is cancelled, every request not yet
/// finished fails with `.cancelled`; `.closed` when the client closes first.
public final class OutboundBatch: Sendable {
    private let client: OutboundClient
    private let batch: Batch

    fileprivate init(client: OutboundClient, batch: Batch) {
        self.client = client
        self.batch = batch
    }

    /// Hands `requests` over (nothing for an empty slice).
    public func add(_ requests: [OutboundRequest]) {
        guard !requests.isEmpty else { return }
        let transfers = requests.map { Transfer(.http($0)) }
        client.onQueue { [client, batch] in client.append(transfers, to: batch) }
    }

    /// Hands `requests` over as the last slice and returns the results of every request added.
    public func results(adding requests: [OutboundRequest] = []) async -> [Result<OutboundResponse, OutboundError>] {
        let transfers = requests.map { Transfer(.http($0)) }
        let client = client
        let batch = batch
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Result<OutboundResponse, OutboundError>], Never>) in
                client.onQueue { client.append(transfers, to: batch) { continuation.resume(returning: $0) } }
            }
        } onCancel: {
            client.onQueue { client.cancel(batch) }
        }
    }
}

extension OutboundClient {
    /// Runs `work` on the client's queue (`OutboundBatch`'s hop).
    fileprivate func onQueue(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }
}

/// The transfers of one `OutboundBatch`: confined to the client's queue like everything else there
/// (`@unchecked Sendable` so completions on that queue may capture it).
private final class Batch: @unchecked Sendable {
    private(set) var transfers: [Transfer] = []
    let width: Int
    /// The index of the next transfer to submit.
    var next = 0
    /// Submitted and not yet finished.
    var inFlight = 0
    /// `admit` is running (a completion inside it must not start another loop).
    var admitting = false
    /// The awaiting task was cancelled: transfers added later fail `.cancelled` unsent.
    var cancelled = false
    private var results: [Result<OutboundResponse, OutboundError>?] = []
    private var remaining = 0
    private var completion: (@Sendable ([Result<OutboundResponse, OutboundError>]) -> Void)?

    init(width: Int) {
        self.width = width
    }

    /// Adds transfers after those already added.
    func append(_ more: [Transfer]) {
        transfers += more
        results += repeatElement(nil, count: more.count)
        remaining += more.count
    }

    /// Nothing more will be added: `completion` gets every result once all have finished (now, if
    /// they have).
    func seal(_ completion: @escaping @Sendable ([Result<OutboundResponse, OutboundError>]) -> Void) {
        self.completion = completion
        completeIfDone()
    }

    /// Records transfer `index`'s result (once); calls the completion when it was the last.
    func finish(_ index: Int, _ result: Result<OutboundResponse, OutboundError>) {
        guard results[index] == nil else { return }
        results[index] = result
        inFlight -= 1
        remaining -= 1
        completeIfDone()
    }

    private func completeIfDone() {
        if remaining == 0, let completion {
            self.completion = nil
            completion(results.map { $0! })
        }
    }
}
