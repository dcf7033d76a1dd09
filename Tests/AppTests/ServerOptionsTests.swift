import App
import Domain
import Logging
import Testing

/// `chronir-server`'s command line and environment, read through the one option table.
@Suite("Server options — flags, CHRONIR_* variables, defaults and checks")
struct ServerOptionsTests {
    func configuration(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ChronirConfiguration {
        try ServerOptions.configuration(arguments: arguments, environment: environment)
    }

    func refusal(_ arguments: [String], _ environment: [String: String] = [:]) -> String? {
        do {
            _ = try configuration(arguments, environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("nothing given: AppConfiguration.Defaults, the public base URL from host and port, the per-address limits half the connections")
    func defaults() throws {
        let c = try configuration([])
        #expect(c.host == AppConfiguration.Defaults.host && c.port == AppConfiguration.Defaults.port)
        #expect(c.app.dataDirectory == AppConfiguration.Defaults.dataDirectory)
        #expect(c.app.defaultTier == AppConfiguration.Defaults.defaultTier)
        #expect(c.app.publicBaseURL == "http://\(AppConfiguration.Defaults.host):\(AppConfiguration.Defaults.port)")
        #expect(c.resolvedMaxConnectionsPerAddress == AppConfiguration.Defaults.maxConnections / 2)
        #expect(c.app.maxWebSocketsPerAddress == AppConfiguration.Defaults.maxConnections / 2)
        #expect(c.tls == nil && c.app.notifications.apns == nil && !c.app.mail.isConfigured && !c.app.oidc.isEnabled)
        #expect(c.app.metrics.onMainPort == false && c.app.metrics.token == nil)
    }

    @Test("a flag wins over its variable; an empty variable or flag counts as unset; --name=value works")
    func precedence() throws {
        let c = try configuration(
            ["--port", "9000", "--log-level=DEBUG", "--data-dir", ""],
            ["CHRONIR_PORT": "7000", "CHRONIR_HOST": "::1", "CHRONIR_DEFAULT_TIER": "", "CHRONIR_MAX_CONNECTIONS": "10"])
        #expect(c.port == 9000)
        #expect(c.host == "::1")
        #expect(c.logLevel == .debug)
        #expect(c.app.dataDirectory == AppConfiguration.Defaults.dataDirectory)
        #expect(c.app.defaultTier == AppConfiguration.Defaults.defaultTier)
        #expect(c.resolvedMaxConnectionsPerAddress == 5)
        #expect(c.app.publicBaseURL == "http://::1:9000")
    }

    @Test("switches: the flag, or the variable set to 1, true or yes")
    func switches() throws {
        #expect(try configuration(["--push-allow-private-endpoints"]).app.notifications.allowPrivateEndpoints)
        #expect(try configuration([], ["CHRONIR_PUSH_ALLOW_PRIVATE_ENDPOINTS": "yes"]).app.notifications.allowPrivateEndpoints)
        #expect(try !configuration([], ["CHRONIR_PUSH_ALLOW_PRIVATE_ENDPOINTS": "0"]).app.notifications.allowPrivateEndpoints)
        #expect(refusal(["--push-allow-private-endpoints=1"]) == "--push-allow-private-endpoints takes no value")
    }

    @Test("refused values name the flag and what it accepts, from a flag or a variable")
    func refusals() {
        #expect(refusal(["--port", "65536"]) == "invalid value '65536' for --port: a whole number, 0–65535")
        #expect(refusal([], ["CHRONIR_DURABILITY": "sometimes"]) == "invalid value 'sometimes' for --durability: normal, full")
        #expect(refusal(["--bogus", "1"]) == "unknown option '--bogus'")
        #expect(refusal(["8080"]) == "unexpected argument '8080'")
        #expect(refusal(["--port"]) == "missing value for '--port <port>'")
        #expect(refusal(["--trusted-proxies", "10.0.0.1,proxy.local"])?.contains("'proxy.local' is not one") == true)
        #expect(refusal(["--max-members", "1"]) == "invalid value '1' for --max-members: a whole number, 2–1000")
    }

    @Test("settings checked together: APNs all four, mail needs a sender, TLS pairs, sign-in ids, the metrics token")
    func together() throws {
        #expect(refusal(["--apns-key-file", "k.p8"])?.hasPrefix("APNs needs all of") == true)
        let apns = try configuration(
            [
                "--apns-key-file", "k.p8", "--apns-key-id", "K", "--apns-team-id", "T", "--apns-topic", "app", "--apns-environment",
                "SANDBOX",
            ])
        #expect(
            apns.app.notifications.apns
                == NotificationsConfiguration.APNs(
                    keyFile: "k.p8", sender: APNsSender.Configuration(keyID: "K", teamID: "T", topic: "app", environment: .sandbox)))
        #expect(refusal(["--smtp-url", "smtp://mail:587"]) == "--smtp-url needs --mail-from")
        #expect(refusal(["--smtp-url", "http://mail"])?.hasPrefix("--smtp-url must be") == true)
        let mail = try configuration(
            ["--smtp-url", "smtp://mail:587", "--mail-from", "a@b.example", "--smtp-username", "u"], ["CHRONIR_SMTP_PASSWORD": "pw"])
        #expect(mail.app.mail.password == "pw" && mail.app.mail.username == "u")
        #expect(refusal([], ["CHRONIR_TLS_CERT": "c.pem"]) == "--tls-cert needs --tls-key")
        #expect(refusal(["--http-redirect-port", "80"]) == "--http-redirect-port needs --tls-cert and --tls-key")
        let tls = try configuration(["--tls-cert", "c.pem", "--tls-key", "k.pem", "--hsts-max-age", "0"])
        #expect(tls.tls == ChronirConfiguration.TLSSettings(certificatePath: "c.pem", keyPath: "k.pem", hstsMaxAge: nil))
        #expect(refusal(["--oidc-apple-issuer", "x"])?.contains("need --oidc-apple-client-ids") == true)
        let google = try configuration(["--oidc-google-client-ids", "a, b", "--oidc-google-web-client-id", "b"])
        #expect(google.app.oidc.google?.clientIDs == ["a", "b"] && google.app.oidc.google?.webClientID == "b")
        #expect(refusal(["--metrics-token", "short"]) == "--metrics-token must be at least 16 characters")
        let metrics = try configuration([], ["CHRONIR_METRICS_TOKEN": String(repeating: "t", count: 16)])
        #expect(metrics.app.metrics.onMainPort)
        #expect(try !configuration(["--metrics-port", "0", "--metrics-token", String(repeating: "t", count: 16)]).app.metrics.onMainPort)
    }

    @Test("every option's help shows its default and variable; Markdown made plain")
    func help() {
        let help = ServerOptions.helpText()
        for option in ServerOptions.all {
            #expect(help.contains("  \(option.flag)"), "\(option.flag)")
            #expect(help.contains("[env: \(option.environmentVariable)]"), "\(option.environmentVariable)")
        }
        #expect(!help.contains("`") && !help.contains("]("))
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 78 })
    }
}
