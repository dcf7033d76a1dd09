// swift-tools-version: 6.2
// Reference WebSocket server for Benchmarks/ws-echo.sh, fanout.sh and idle-sockets.sh: the same
// endpoints on Hummingbird 2 + hummingbird-websocket (SwiftNIO), to compare chronir's own
// Dispatch-source transport against. A separate package: never part of chronir-server, not built by CI.
import PackageDescription

let package = Package(
    name: "hummingbird-ws",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", exact: "2.8.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdWS", dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ])
    ]
)
