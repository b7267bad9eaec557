// MARK: - deploy/: the systemd unit and the sample configuration

import Foundation
import Testing

@Suite struct DeployTests {
    static let systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(
        "systemd-analyze verify accepts the unit",
        .enabled(if: systemdAnalyze != nil, "systemd-analyze is not installed"),
        .timeLimit(.minutes(5)))
    func verify() async throws {
        // verify checks that ExecStart's binary exists: point it at the built server (or any executable).
        let unit = try String(contentsOfFile: repositoryRoot + "/deploy/meridian-server.service", encoding: .utf8)
        let binary = product("meridian-server")
        try #require(FileManager.default.isExecutableFile(atPath: binary), "\(binary) is not built")
        let directory = NSTemporaryDirectory() + "meridian-unit-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/meridian-server.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/meridian-server", with: binary)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let child = try ChildProcess(Self.systemdAnalyze!, ["verify", path])
        let status = await child.waitForExit()
        let output = await child.allOutput() + (await child.allErrorOutput())
        #expect(status == 0, "\(output)")
        #expect(output.isEmpty, "\(output)")
    }

    @Test("the unit is hardened and restarts on failure")
    func hardening() throws {
        let unit = try String(contentsOfFile: repositoryRoot + "/deploy/meridian-server.service", encoding: .utf8)
        for line in [
            "DynamicUser=yes", "StateDirectory=meridian", "Restart=on-failure", "ProtectSystem=strict",
            "NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
            "RestartPreventExitStatus=2", "KillSignal=SIGTERM",
        ] {
            #expect(unit.split(separator: "\n").contains { $0 == line }, "missing \(line)")
        }
    }

    @Test("every variable of the sample configuration is a flag in the unit, and the reverse")
    func configurationMapsToFlags() throws {
        let unit = try String(contentsOfFile: repositoryRoot + "/deploy/meridian-server.service", encoding: .utf8)
        let sample = try String(contentsOfFile: repositoryRoot + "/deploy/meridian-server.conf.sample", encoding: .utf8)
        let sampleVariables = Set(
            sample.split(separator: "\n").filter { $0.hasPrefix("#MERIDIAN_") }.map {
                String($0.dropFirst().prefix { $0 != "=" })
            })
        let unitVariables = Set(
            unit.split(separator: "\n").filter { $0.hasPrefix("Environment=MERIDIAN_") }.map {
                String($0.dropFirst("Environment=".count).prefix { $0 != "=" })
            })
        #expect(sampleVariables == unitVariables)
        for variable in unitVariables where variable != "MERIDIAN_EXTRA_ARGS" {
            #expect(unit.contains("${\(variable)}"), "\(variable) is not passed to ExecStart")
        }
    }
}
