// swift-tools-version: 6.2
// Chronir group server. Module layout and import rules: see docs/architecture.md.
// A module imports only modules listed before it here (no upward arrows).
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Warnings fail the build, locally and in CI (one command for both).
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "chronir-server",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "chronir-server", targets: ["Server"]),
        .executable(name: "chronir-admin", targets: ["Admin"]),
        .executable(name: "chronir-ws-echo", targets: ["WebSocketEcho"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Metrics API (handles created through an injected factory, never the global bootstrap)
        // and its Prometheus backend; App and Server only — Transport and SQLite expose hooks.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Ordered graceful shutdown of the server's parts (ServiceGroup); App and Server only.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // System C libraries (module.modulemap + shim.h only).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // libcurl (OpenSSL + nghttp2 on Debian); shim.h wraps its variadic setopt/getinfo.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libvips (Debian's, with its heif and poppler modules): the only image and PDF decoder.
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),

        // Digests, HMAC, CSPRNG, scrypt, constant-time compare, base64url; HKDF, AES-128-GCM, P-256
        // (ECDH, ES256, PKCS#8 PEM), RSA (PEM, RS256): with TLS (below), the only users of COpenSSL.
        .target(name: "Hashing", dependencies: ["COpenSSL"], swiftSettings: strict),
        // Sans-I/O Web Push (RFC 8291 message encryption, RFC 8292 VAPID), ES256 JWTs and push-subscription
        // validation: bytes and strings in and out, no sockets, no clocks (callers pass `now`).
        .target(name: "Push", dependencies: ["Hashing"], swiftSettings: strict),
        // Sans-I/O OpenID Connect ID-token verification for Sign in with Apple/Google: JWKS
        // parsing, RS256/ES256 signatures, iss/aud/exp/iat/nonce. No sockets, no clocks (callers pass `now`).
        .target(name: "Identity", dependencies: ["Hashing"], swiftSettings: strict),
        // Sans-I/O protocol cores: HTTP/1.1 parser and response writer, WebSocket frames and
        // permessage-deflate (zlib). Imports no other module of ours, so fuzzers compile it standalone.
        .target(name: "Wire", dependencies: ["CZlib"], swiftSettings: strict),
        // Client addresses as the networks they count as (an IPv6 /64, an IPv4 address) and the coarse
        // network a user is shown for a session; pure (inet_pton), used by Transport, Store and App.
        .target(name: "IPAddresses", swiftSettings: strict),
        // Sans-I/O TLS on libssl: an SSL_CTX from PEM (TLS 1.2/1.3, Mozilla intermediate, ALPN http/1.1,
        // tickets) and a per-connection engine over memory BIOs: ciphertext in, plaintext and records out.
        .target(name: "TLS", dependencies: ["COpenSSL", "Hashing"], swiftSettings: strict),
        // Event loops on DispatchSource: listener, connections, timers, signals; TLS through the engine.
        .target(name: "Transport", dependencies: ["Wire", "TLS", "IPAddresses"], swiftSettings: strict),
        // The database interface both backends implement: SQLValue, Row, SQLConnection, SQLDatabase,
        // StorageFailure, SQLDialect, the checksummed migration runner. The Store is written once over it.
        // Knows no engine and no domain.
        .target(name: "Storage", dependencies: ["Hashing"], swiftSettings: strict),
        // Thin safe Swift over sqlite3, writer queue + reader pool, migration runner. Knows no domain.
        .target(name: "SQLite", dependencies: ["CSQLite", "Storage"], swiftSettings: strict),
        // Thin safe Swift over libpq: blocking connection, parameterised statements, SQLSTATE errors,
        // LISTEN through a DispatchSource on PQsocket. Knows no domain.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Hashing", "Storage"], swiftSettings: strict),
        // The server's outbound HTTP client: libcurl's multi-socket API driven by Dispatch sources on one
        // serial queue (HTTP/2, TLS, connection reuse), named limits, the SSRF address check. Knows no
        // provider and no domain; push senders and mail build on it.
        .target(name: "Outbound", dependencies: ["CCurl", "Hashing"], swiftSettings: strict),
        // Attachment content: magic-byte sniffing, polyglot refusal, the pixel limit read from
        // the header, full decode, metadata-free re-encode and thumbnails through libvips. Bytes in,
        // bytes out: no files, sockets or clocks. The only module of the server that links CVips (TestSupport
        // builds test inputs with it).
        .target(name: "Media", dependencies: ["CVips", "CZlib"], swiftSettings: strict),
        // Pure domain rules: accounts, emails, passwords policy, rate limits; the change-log values
        // (Change, ChangeKind, ChangeEvent, ChangeFeed.Row/Batch/Replay) Store writes and Realtime reads. No I/O.
        .target(name: "Domain", dependencies: ["Hashing", "Push"], swiftSettings: strict),
        // SQL for the Domain, row mapping, change_log writes; embeds Migrations/{sqlite,postgres}/*.sql at build time.
        .target(
            name: "Store", dependencies: ["Domain", "Storage", "Hashing", "IPAddresses"], swiftSettings: strict,
            plugins: ["EmbedMigrations"]),
        // The realtime feed's core: topics, subscriptions, change-log fan-out, resume, revocation,
        // per-subscriber budgets and conflation — sans-I/O (bytes out, no sockets, no clocks, no database:
        // the shell reads the change log and hands the hub Domain values).
        .target(name: "Realtime", dependencies: ["Domain"], swiftSettings: strict),
        // Composition: routes, JSON handlers, auth, static files, config, access log, metrics; the
        // notification senders (Push + Outbound); Sign in with Apple/Google (Identity + Outbound).
        .target(
            name: "App",
            dependencies: [
                "Hashing", "Push", "Identity", "IPAddresses", "Wire", "TLS", "Transport", "Storage", "SQLite", "Postgres", "Outbound",
                "Media",
                "Domain",
                "Store", "Realtime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        // chronir-server entry point.
        .executableTarget(
            name: "Server",
            dependencies: [
                "App", "Transport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // chronir-admin: moderation and database commands over the same Store code as the API.
        .executableTarget(
            name: "Admin",
            dependencies: [
                "Store", "Domain", "Storage", "SQLite", "Postgres", "Hashing", "Wire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // chronir-ws-echo: a WebSocket echo endpoint on the same Transport + Wire stack, the
        // testee of the Autobahn|Testsuite (.ci/autobahn.sh). Not part of the server.
        .executableTarget(
            name: "WebSocketEcho", dependencies: ["Transport", "Wire", "Hashing", "TLS"], swiftSettings: strict),
        // Test helpers shared by the test targets: chunk feeder, temp databases, loopback client, clock,
        // the Python venv for fake services (Tests/Fakes), a throwaway TLS certificate authority.
        .target(
            name: "TestSupport",
            dependencies: ["Wire", "Storage", "SQLite", "Postgres", "Transport", "Domain", "CVips", "CZlib", "Media"],
            swiftSettings: strict),

        // Build-time tool + plugin that turn Migrations/<dialect>/*.sql into Swift source inside Store, so the
        // installed binary never depends on the current directory to find its schema.
        .executableTarget(name: "EmbedMigrationsTool", swiftSettings: strict),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),

        .testTarget(name: "HashingTests", dependencies: ["Hashing"], swiftSettings: strict),
        .testTarget(name: "PushTests", dependencies: ["Push", "Hashing", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "IdentityTests", dependencies: ["Identity", "Hashing"], swiftSettings: strict),
        .testTarget(name: "WireTests", dependencies: ["Wire", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "IPAddressesTests", dependencies: ["IPAddresses"], swiftSettings: strict),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "TransportTests", dependencies: ["Transport", "Wire", "Hashing", "TLS", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "Storage", "Hashing", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "Storage", "SQLite", "Store", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "OutboundTests", dependencies: ["Outbound", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "MediaTests", dependencies: ["Media", "CVips", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DomainTests", dependencies: ["Domain", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "StoreTests", dependencies: ["Store", "Domain", "Storage", "SQLite", "Postgres", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "RealtimeTests", dependencies: ["Realtime", "Store", "Domain", "Storage", "SQLite", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "AppTests",
            dependencies: [
                "App", "Realtime", "Store", "Domain", "Transport", "Wire", "Storage", "SQLite", "Postgres", "Hashing",
                "Outbound", "Push", "Identity", "Media", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
    ]
)
