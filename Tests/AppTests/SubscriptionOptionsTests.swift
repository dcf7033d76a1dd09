import App
import Domain
import Foundation
import Hashing
import Identity
import TestSupport
import Testing

/// The subscription options (docs/configuration.md#subscriptions): the products file, the App Store
/// settings that only work together, the transfer rule; every refusal names the flag.
@Suite("Subscription options — --products-file, --appstore-*, --purchase-transfer")
struct SubscriptionOptionsTests {
    func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try ServerOptions.configuration(arguments: arguments, environment: [:])
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("defaults: the seeds' eight products, no App Store, transfers refused")
    func defaults() throws {
        let c = try ServerOptions.configuration(arguments: [], environment: [:])
        #expect(c.app.subscriptions.catalogue == .standard)
        #expect(c.app.subscriptions.catalogue.products.count == 8)
        #expect(c.app.subscriptions.catalogue.product(.appStore, "com.chronir.premium.annual")?.tier == .premium)
        #expect(c.app.subscriptions.catalogue.product(.play, "chronir_plus_monthly")?.tier == .plus)
        #expect(c.app.subscriptions.appStore == nil)
        #expect(c.app.subscriptions.purchaseTransfer == .refuse)
    }

    @Test("a products file replaces the catalogue; bad files are refused with the reason")
    func productsFile() throws {
        let directory = TemporaryDirectory()
        func file(_ name: String, _ text: String) throws -> String {
            let path = directory.file(named: name)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let good = try file("good.json", #"{"products":[{"store":"app_store","product_id":"com.x.gold","tier":"premium"}]}"#)
        let c = try ServerOptions.configuration(arguments: ["--products-file", good], environment: [:])
        #expect(c.app.subscriptions.catalogue.products == [Product(source: .appStore, productID: "com.x.gold", tier: .premium)])
        let cases: [(String, String)] = [
            (#"{"products":[]}"#, "no products"),
            (#"{"products":[{"store":"app_store","product_id":"a","tier":"free"}]}"#, "grants free"),
            (#"{"products":[{"store":"operator","product_id":"a","tier":"plus"}]}"#, "app_store or play"),
            (#"{"products":[{"store":"play","product_id":"a","tier":"plus"},{"store":"play","product_id":"a","tier":"plus"}]}"#, "twice"),
            ("not json", "expected"),
        ]
        for (index, (text, reason)) in cases.enumerated() {
            let message = refusal(["--products-file", try file("bad\(index).json", text)])
            #expect(message?.contains("--products-file") == true, "\(text)")
            #expect(message?.contains(reason) == true, "\(text): \(message ?? "accepted")")
        }
        #expect(refusal(["--products-file", directory.file(named: "missing.json")])?.contains("cannot read") == true)
    }

    @Test("App Store settings: on with a bundle id; the others need it; Production needs the app id; a root file must hold a certificate")
    func appStore() throws {
        let sandbox = try ServerOptions.configuration(
            arguments: ["--appstore-bundle-id", "com.chronir.app", "--appstore-environment", "Sandbox"], environment: [:])
        #expect(sandbox.app.subscriptions.appStore?.bundleID == "com.chronir.app")
        #expect(sandbox.app.subscriptions.appStore?.environment == .sandbox)
        #expect(sandbox.app.subscriptions.appStore?.roots.map(\.derRepresentation) == [AppStoreVerifier.appleRootCAG3.derRepresentation])
        #expect(refusal(["--appstore-environment", "Sandbox"])?.contains("needs --appstore-bundle-id") == true)
        #expect(refusal(["--appstore-bundle-id", "com.chronir.app"])?.contains("--appstore-app-apple-id") == true)
        #expect(refusal(["--appstore-bundle-id", "a", "--appstore-environment", "Staging"])?.contains("--appstore-environment") == true)
        #expect(refusal(["--appstore-bundle-id", "a", "--appstore-app-apple-id", "-3"])?.contains("--appstore-app-apple-id") == true)
        let production = try ServerOptions.configuration(
            arguments: ["--appstore-bundle-id", "a", "--appstore-app-apple-id", "1234"], environment: [:])
        #expect(production.app.subscriptions.appStore?.appAppleID == 1234)
        let directory = TemporaryDirectory()
        let junk = directory.file(named: "junk.pem")
        try "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".write(toFile: junk, atomically: true, encoding: .utf8)
        #expect(
            refusal(["--appstore-bundle-id", "a", "--appstore-environment", "Xcode", "--appstore-root-ca", junk])?
                .contains("no PEM or DER certificate") == true)
        let chain = try AppStoreTestChain()
        let pinned = try ServerOptions.configuration(
            arguments: ["--appstore-bundle-id", "a", "--appstore-environment", "Xcode", "--appstore-root-ca", chain.rootPEMPath],
            environment: [:])
        #expect(pinned.app.subscriptions.appStore?.roots.map(\.derRepresentation) == [chain.rootDER])
        #expect(refusal(["--purchase-transfer", "maybe"])?.contains("refuse, transfer") == true)
        let transfer = try ServerOptions.configuration(arguments: ["--purchase-transfer", "transfer"], environment: [:])
        #expect(transfer.app.subscriptions.purchaseTransfer == .transfer)
    }

    @Test("Google Play: the service account needs the package name, the others need the service account, the RTDN secret ≥ 16 bytes")
    func play() throws {
        let directory = TemporaryDirectory()
        let account = directory.file(named: "play.json")
        let secret = directory.file(named: "rtdn")
        try "0123456789abcdef\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let short = directory.file(named: "short")
        try "0123456789\n".write(toFile: short, atomically: true, encoding: .utf8)
        let c = try ServerOptions.configuration(
            arguments: [
                "--play-service-account-file", account, "--play-package-name", "com.chronir.android", "--play-rtdn-token-file", secret,
            ], environment: [:])
        #expect(c.app.subscriptions.playSettings == .init(serviceAccountFile: account, packageName: "com.chronir.android"))
        #expect(c.app.subscriptions.playRTDNToken == "0123456789abcdef", "one trailing newline ignored")
        #expect(refusal(["--play-service-account-file", account])?.contains("--play-package-name") == true)
        #expect(refusal(["--play-package-name", "com.chronir.android"])?.contains("needs --play-service-account-file") == true)
        #expect(refusal(["--play-service-account-file", account, "--play-package-name", "com/../x"]) != nil)
        #expect(
            refusal(["--play-service-account-file", account, "--play-package-name", "a.b", "--play-api-url", "http://x"])?.contains(
                "--play-api-url") == true)
        #expect(
            refusal(["--play-service-account-file", account, "--play-package-name", "a.b", "--play-rtdn-token-file", short])?.contains(
                "16 bytes") == true)
    }
}

extension SubscriptionOptionsTests {
    @Test("App Store Server API: key file, key id and issuer id together, with a bundle id; the origin follows the environment")
    func appStoreAPI() throws {
        let sandbox = ["--appstore-bundle-id", "com.chronir.app", "--appstore-environment", "Sandbox"]
        let key = ["--appstore-key-file", "/k.p8", "--appstore-key-id", "2X9R4HXF34", "--appstore-issuer-id", "issuer"]
        let c = try ServerOptions.configuration(arguments: sandbox + key, environment: [:])
        let expected = AppStoreServerAPI.Configuration(
            keyID: "2X9R4HXF34", issuerID: "issuer", bundleID: "com.chronir.app", baseURL: AppStoreServerAPI.sandboxURL)
        #expect(c.app.subscriptions.appStoreAPISettings == .init(keyFile: "/k.p8", api: expected))
        let production = try ServerOptions.configuration(
            arguments: ["--appstore-bundle-id", "com.chronir.app", "--appstore-app-apple-id", "1234"] + key, environment: [:])
        #expect(production.app.subscriptions.appStoreAPISettings?.api.baseURL == AppStoreServerAPI.productionURL)
        let fake = try ServerOptions.configuration(
            arguments: sandbox + key + ["--appstore-api-url", "https://127.0.0.1:9"], environment: [:])
        #expect(fake.app.subscriptions.appStoreAPISettings?.api.baseURL == "https://127.0.0.1:9")
        #expect(try ServerOptions.configuration(arguments: sandbox, environment: [:]).app.subscriptions.appStoreAPISettings == nil)
        #expect(refusal(key)?.contains("--appstore-key-file needs --appstore-bundle-id") == true)
        #expect(refusal(sandbox + ["--appstore-key-file", "/k.p8"])?.contains("--appstore-key-id and --appstore-issuer-id") == true)
        #expect(refusal(sandbox + ["--appstore-key-id", "x"])?.contains("--appstore-key-id needs --appstore-key-file") == true)
        #expect(refusal(sandbox + key + ["--appstore-api-url", "http://x"])?.contains("an https URL") == true)
    }
}

extension SubscriptionOptionsTests {
    @Test("RTDN push authentication: --play-rtdn-audience (and the service account) with the Play settings; the account needs the audience")
    func rtdnAudience() throws {
        let play = ["--play-service-account-file", "/sa.json", "--play-package-name", "com.chronir.android"]
        let audience = ["--play-rtdn-audience", "https://chronir.example.com/v1/store/google/rtdn"]
        let c = try ServerOptions.configuration(
            arguments: play + audience + ["--play-rtdn-service-account", "push@x.iam.gserviceaccount.com"], environment: [:])
        #expect(
            c.app.subscriptions.playRTDNPush
                == .init(audience: "https://chronir.example.com/v1/store/google/rtdn", serviceAccount: "push@x.iam.gserviceaccount.com"))
        #expect(c.app.subscriptions.playRTDNPush?.keySetURL == PubSubPushAuthenticator.googleKeySetURL)
        #expect(try ServerOptions.configuration(arguments: play, environment: [:]).app.subscriptions.playRTDNPush == nil)
        #expect(refusal(audience)?.contains("--play-rtdn-audience needs --play-service-account-file") == true)
        #expect(refusal(play + ["--play-rtdn-service-account", "a@b"])?.contains("needs --play-rtdn-audience") == true)
        #expect(refusal(play + audience + ["--play-rtdn-service-account", "nobody"])?.contains("an email address") == true)
    }
}
