import Testing
import Transport

@testable import App

/// Where `Application` runs a request's task: on its connection's loop, unless its body is large
/// enough that decoding it would hold the loop's other connections up.
@Suite("Request tasks: the connection's loop, or the pool for a large body")
struct RequestTaskPlacementTests {
    @Test func aRequestUpToTheLimitRunsOnItsLoopALargerOneOnThePool() {
        let loop = EventLoop(label: "test")
        for bytes in [0, 1_000, Application.maxBodyBytesOnLoop] {
            let chosen = Application.taskExecutor(bodyBytes: bytes, loop: loop)
            #expect((chosen as AnyObject?) === loop, "a body of \(bytes) bytes")
        }
        for bytes in [Application.maxBodyBytesOnLoop + 1, 1 << 20] {
            #expect(Application.taskExecutor(bodyBytes: bytes, loop: loop) == nil, "a body of \(bytes) bytes")
        }
        #expect(Application.taskExecutor(bodyBytes: 0, loop: nil) == nil)  // a closure-backed sink: the pool
    }
}
