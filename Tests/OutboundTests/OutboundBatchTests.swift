import Foundation
import Outbound
import TestSupport
import Testing

/// `OutboundClient.send(_:width:)`, the batch a notification round hands over at once: results in
/// the requests' order, at most `width` running, a refused request failing alone, cancellation and
/// close reaching every request of the batch; `OutboundBatch`, the same handed over in slices.
@Suite("OutboundClient batches")
struct OutboundBatchTests {
    @Test func resultsComeInTheRequestsOrderAndARefusedOneFailsAlone() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        var requests = (0..<40).map { OutboundRequest(method: .post, url: server.https("/echo"), body: Array("\($0)".utf8)) }
        requests[17] = OutboundRequest(url: server.https("/echo"), headers: [HTTPField(name: "X A", value: "1")])
        let results = await client.send(requests, width: 8)
        #expect(results.count == 40)
        for (index, result) in results.enumerated() {
            switch result {
            case .success(let response):
                #expect(index != 17)
                #expect(try Echo(response).body == "\(index)")
            case .failure(let error):
                guard index == 17, case .invalidRequest = error else {
                    Issue.record("request \(index) failed: \(error)")
                    continue
                }
            }
        }
        #expect(await client.send([], width: 8).isEmpty)
    }

    @Test func atMostWidthRunAndTheRestWaitInTheBatch() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let requests = (0..<6).map { _ in OutboundRequest(url: server.https("/slow?seconds=60")) }
        let batch = Task { await client.send(requests, width: 3) }
        #expect(await eventually { client.load.running == 3 })
        // The batch keeps the other three: the client's own queue holds none of them.
        #expect(client.load.waiting == 0)
        batch.cancel()
        let results = await batch.value
        #expect(results.count == 6)
        for result in results {
            guard case .failure(.cancelled) = result else {
                Issue.record("expected cancelled, got \(result)")
                continue
            }
        }
        #expect(client.load.running == 0)
    }

    @Test func closeFailsEveryRequestOfABatch() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        let requests = (0..<4).map { _ in OutboundRequest(url: server.https("/slow?seconds=60")) }
        let batch = Task { await client.send(requests, width: 2) }
        #expect(await eventually { client.load.running == 2 })
        client.close()
        for result in await batch.value {
            guard case .failure(.closed) = result else {
                Issue.record("expected closed, got \(result)")
                continue
            }
        }
    }

    /// A slice starts before the next is added, and the results cover every slice in order.
    @Test func slicesStartAsTheyAreAddedAndResultsCoverEverySliceInOrder() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let batch = client.batch(width: 4)
        // The first slice is held by the server until the test releases it: it is seen running
        // before the next slice is added however slowly this machine polls.
        batch.add([OutboundRequest(url: server.https("/hold?name=first"))])
        #expect(await eventually { client.load.running == 1 })
        batch.add([])
        batch.add((1..<3).map { OutboundRequest(method: .post, url: server.https("/echo"), body: Array("\($0)".utf8)) })
        #expect(try await client.send(OutboundRequest(url: server.https("/release?name=first"))).status == 200)
        let results = await batch.results(adding: [OutboundRequest(method: .post, url: server.https("/echo"), body: Array("3".utf8))])
        #expect(results.count == 4)
        #expect(try results[0].get().status == 200)
        for index in 1..<4 { #expect(try Echo(results[index].get()).body == "\(index)") }
        #expect(await client.batch(width: 4).results().isEmpty)
    }

    @Test func cancellingTheResultsFailsEverySliceNotFinished() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let batch = client.batch(width: 2)
        batch.add((0..<3).map { _ in OutboundRequest(url: server.https("/slow?seconds=60")) })
        #expect(await eventually { client.load.running == 2 })
        let waiting = Task { await batch.results(adding: [OutboundRequest(url: server.https("/slow?seconds=60"))]) }
        waiting.cancel()
        let results = await waiting.value
        #expect(results.count == 4)
        for result in results {
            guard case .failure(.cancelled) = result else {
                Issue.record("expected cancelled, got \(result)")
                continue
            }
        }
        #expect(client.load.running == 0)
    }
}
