import Foundation
import PackagePlugin

/// Generates `EmbeddedMigrations.swift` in the target from the package's `Migrations/sqlite/*.sql` and
/// `Migrations/postgres/*.sql`,
/// so the schema ships inside the binary (no runtime lookup relative to the working directory).
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL.appending(path: "Migrations")
        var files: [URL] = []
        for dialect in ["sqlite", "postgres"] {
            files += try FileManager.default.contentsOfDirectory(
                at: root.appending(path: dialect), includingPropertiesForKeys: nil
            )
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
