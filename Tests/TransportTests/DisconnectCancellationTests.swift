import Dispatch
import TestSupport
import Testing
import Transport
import Wire

/// `/task` starts a task that runs until cancelled and registers `sink.onCancel { task.cancel() }`;
/// `/answered` answers at once and registers a handler that must never run.
private struct CancellingResponder: HTTPResponder {
    let started = Counter()
    let cancelledTasks = Counter()
    let handlersRun = Counter()

    func respond(to request: consuming HTTPRequest, context: RequestContext, sink: ResponseSink) {
        started.add()
        if request.head.path == "/answered" {
            sink.send(HTTPResponse(status: .ok, body: Array("done".utf8)))
            sink.onCancel { handlersRun.add() }
            return
        }
        let cancelledTasks = cancelledTasks
        let (never, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            // An async handler's work: it ends only when cancelled (an AsyncStream's iteration ends then).
            for await _ in never {}
            withExtendedLifetime(continuation) {}
            if Task.isCancelled { cancelledTasks.add() }
        }
        sink.onCancel {
            handlersRun.add()
            task.cancel()
        }
    }
}

/// Async tests with the async `eventually`: the cancelled task needs a cooperative thread to finish on,
/// so the test must not block one while it waits (see `blocking` in TestSupport).
@Suite("A client that disconnects cancels its request's handler")
struct DisconnectCancellationTests {
    @Test func resetWhileTheHandlerRunsCancelsItsTask() async throws {
        let responder = CancellingResponder()
        let server = HTTPServer(configuration: testConfiguration(), responder: responder)
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send(LoopbackClient.requestBytes("GET", "/task"))
        #expect(await eventually { responder.started.value == 1 })
        #expect(responder.handlersRun.value == 0)
        client.reset()
        #expect(await eventually { responder.cancelledTasks.value == 1 })
        #expect(responder.handlersRun.value == 1)
        #expect(await eventually { server.openConnectionCount == 0 })
        #expect(try await blocking { shutdownAndWait(server) })
    }

    @Test func forcedCloseAtShutdownCancelsTheTaskToo() async throws {
        let responder = CancellingResponder()
        let server = HTTPServer(
            configuration: testConfiguration { $0.shutdownGracePeriod = .zero }, responder: responder)
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send(LoopbackClient.requestBytes("GET", "/task"))
        #expect(await eventually { responder.started.value == 1 })
        #expect(try await blocking { shutdownAndWait(server) })
        #expect(await eventually { responder.cancelledTasks.value == 1 })
        nonisolated(unsafe) let closing = client  // used by the waiting thread only from here on
        #expect(try await blocking { closing.waitForClose() })
    }

    @Test func aHalfCloseDoesNotCancelAndAnAnsweredRequestIsNotCancelled() async throws {
        let responder = CancellingResponder()
        let server = HTTPServer(
            configuration: testConfiguration { $0.shutdownGracePeriod = .zero }, responder: responder)
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        #expect(try client.request("GET", "/answered").status == 200)
        client.reset()
        #expect(await eventually { server.openConnectionCount == 0 })
        #expect(responder.handlersRun.value == 0)

        // A half-close is a client done sending, still reading: its request stays with the handler.
        let halfClosed = try LoopbackClient(port: port)
        try halfClosed.send(LoopbackClient.requestBytes("GET", "/task"))
        #expect(await eventually { responder.started.value == 2 })
        halfClosed.shutdownWrite()
        server.drainLoops()
        #expect(server.openConnectionCount == 1)
        #expect(responder.handlersRun.value == 0)
        // The server's shutdown closes it with the request unanswered: now the task is cancelled.
        #expect(try await blocking { shutdownAndWait(server) })
        #expect(await eventually { responder.cancelledTasks.value == 1 })
        #expect(responder.handlersRun.value == 1)
    }
}
