// MARK: - ResultsController: Observation
//
// A controller is `Observable` so that SwiftUI redraws from it with no adapter: every read (`objects`, `sections`,
// `count`, `seq`, `object(at:)`, …) registers with one registrar, and each commit that changes what the controller
// shows is one mutation of it — one notification per commit, however many rows it moved, and none for a commit
// that does not touch the controller's query. The state stays where it was, behind the view store's lock; the
// notification is sent after that lock is released, so an observer that reads in its `onChange` already sees the
// new state.

public import Observation

extension ResultsController: Observable {}

/// The Observation registrar of one controller's content.
///
/// Created with the controller and kept by its engine in the view store, so that the context (which knows no
/// element type) can say "this controller changed" in the same step that changed it. Observers register on it
/// through the controller's reads; the controller conforms to `Observable` and these are its observations.
final class ResultsObservation: Observable, Sendable {
    private let registrar = ObservationRegistrar()

    init() {}

    /// The one observed property: everything the controller shows (rows, sections, pending ids, load state, error
    /// and the seq they are at). Reads register on it; a commit mutates it once.
    var content: Void { () }

    /// Registers a read of the controller's content with the current observation tracking, if any.
    func access() {
        self.registrar.access(self, keyPath: \.content)
    }

    /// Tells observers that the content changed. Called after the change, outside the view store's lock.
    func contentDidChange() {
        self.registrar.withMutation(of: self, keyPath: \.content) {}
    }
}
