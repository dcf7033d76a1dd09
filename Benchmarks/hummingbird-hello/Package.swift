// swift-tools-version: 6.0
// Reference server for Benchmarks/http-healthz.sh: the same GET /healthz on Hummingbird 2 (SwiftNIO),
// to compare our Dispatch-source transport against. A separate package: never part of chronir-server.
import PackageDescription

let package = Package(
    name: "hummingbird-hello",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "HelloHummingbird", dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
            ])
    ]
)
