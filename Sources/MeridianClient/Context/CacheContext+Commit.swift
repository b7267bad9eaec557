// MARK: - CacheContext: the commit step
//
// Every change — a Batch, a local save, a confirmation, a revert, a replaced request — ends here: the rows it
// touched are read as the controllers show them (the replica's server rows with the write queue's overlay on top),
// every controller moves in one critical section of the view store, and each one's change set is delivered.

internal import Logging
internal import MeridianCore

extension CacheContext {
    // MARK: - Rows as shown

    /// The row as `subscription` shows it: the server's row with pending writes on top; a pending write makes a row
    /// part of the subscription while it matches the subscription's predicate.
    func effectiveRow(_ id: String, in subscription: SubscriptionState) -> Row? {
        let isMember = self.replica.isMember(id, of: subscription)
        let key = RowKey(entity: subscription.entity, id: id)
        // Nothing pending at all: no key to hash and look up.
        guard !self.writes.overlay.isEmpty, self.writes.isPending(key) else {
            return isMember ? self.replica.serverRow(subscription.entity, id) : nil
        }
        let row = self.writes.pendingRow(
            key, over: self.replica.serverRow(subscription.entity, id),
            entity: self.schema?.entity(named: subscription.entity))
        guard let row, subscription.bound.matches(row) else { return nil }
        return row
    }

    /// Every row `subscription` shows (server rows and pending ones), each id once (the members are a set, and the
    /// pending rows added are those of non-members).
    func effectiveRows(of subscription: SubscriptionState) -> [Row] {
        // Nothing pending: the members' server rows, read from the entity's cache directly.
        if self.writes.overlay.isEmpty { return self.replica.serverRows(of: subscription) }
        var result: [Row] = []
        result.reserveCapacity(self.replica.memberCount(of: subscription))
        for id in self.replica.memberIDs(of: subscription) {
            if let row = self.effectiveRow(id, in: subscription) { result.append(row) }
        }
        for key in self.writes.overlay.keys
        where key.entity == subscription.entity && !self.replica.isMember(key.id, of: subscription) {
            if let row = self.effectiveRow(key.id, in: subscription) { result.append(row) }
        }
        return result
    }

    /// The row as the context currently shows it: the server's, with pending operations on top.
    func currentRow(_ entity: String, _ id: String) -> Row? {
        self.writes.pendingRow(
            RowKey(entity: entity, id: id), over: self.replica.serverRow(entity, id),
            entity: self.schema?.entity(named: entity))
    }

    /// Ends a step that may have moved the applied seq: confirms the transactions it covers, commits, persists,
    /// acknowledges, and wakes whoever waited for it.
    func finishStep(_ work: CommitWork, moved: Bool, cause: ResultsChangeCause = .remote) {
        var work = work
        let (confirmed, rows) = self.writes.confirm(upTo: self.replica.appliedSeq)
        for key in rows { self.replica.touch(key.entity, key.id, work: &work) }
        if !work.isEmpty || moved || !confirmed.isEmpty {
            self.commit(work, cause: work.isEmpty && !confirmed.isEmpty ? .confirmed : cause)
        }
        self.flush()
        self.acknowledge()
        for (id, commitSeq) in confirmed { self.resolveWaiters(id, with: .success(commitSeq)) }
        self.resumeSeqWaiters()
    }

    // MARK: - Commit

    /// Moves every controller to the current state in one critical section and delivers each one's change set.
    ///
    /// - Parameters:
    ///   - work: The rows that may have changed, by subscription, and the subscriptions to re-read entirely.
    ///   - cause: Why.
    ///   - error: For a revert, the server's reason.
    func commit(_ work: CommitWork, cause: ResultsChangeCause, error: ClientError? = nil) {
        enum Action {
            case apply([RowMutation])
            case reset([Row])
            case rebuild(BoundFetchRequest, [Row])
        }
        var actions: [UInt64: Action] = [:]
        for (id, record) in self.controllers {
            guard let subscription = self.replica.subscriptions[record.subscriptionID] else { continue }
            if record.follows && record.bound != subscription.bound {
                actions[id] = .rebuild(subscription.bound, self.effectiveRows(of: subscription))
                self.controllers[id]?.bound = subscription.bound
            } else if work.resets.contains(record.subscriptionID) {
                actions[id] = .reset(self.effectiveRows(of: subscription))
            } else if let ids = work.affected[record.subscriptionID], !ids.isEmpty {
                actions[id] = .apply(
                    self.writes.overlay.isEmpty
                        ? self.replica.serverMutations(ids, of: subscription)
                        : ids.map { id in
                            self.effectiveRow(id, in: subscription).map(RowMutation.upsert) ?? .delete(id: id)
                        })
            }
        }
        let seq = self.replica.appliedSeq
        var failures: [String] = []
        let changed = self.view.withLock { state in
            var changed: [ResultsObservation] = []
            state.seq = seq
            for (id, box) in state.engines {
                guard let record = self.controllers[id] else { continue }
                let oldCounts = self.validatesChangeSets ? box.results.sections.map(\.count) : []
                var changeSet = ChangeSet<Row>()
                // Changed without a change set: reset while nobody takes its changes one by one.
                var changedUntold = false
                switch actions[id] {
                case .apply(let mutations)?:
                    // One mutation per id: the ids of a set.
                    changeSet = box.results.apply(uniqueMutations: mutations)
                case .reset(let rows)? where box.sinks.isEmpty && !self.validatesChangeSets:
                    // No change stream, no delegate: the change set would reach no one (one that starts later gets
                    // the rows as they are then); whether the rows changed still says whether to tell observers.
                    changedUntold = box.results.replace(uniqueRows: rows)
                case .reset(let rows)?:
                    changeSet = box.results.reset(uniqueRows: rows)
                case .rebuild(let bound, let rows)?:
                    let before = box.results.snapshot
                    if var results = try? LiveResults(bound) {
                        results.replace(uniqueRows: rows)
                        box.results = results
                        changeSet = (try? ChangeSet.between(old: before, new: results.snapshot)) ?? ChangeSet()
                    }
                case nil:
                    break
                }
                if self.validatesChangeSets, !changeSet.isEmpty {
                    do {
                        try changeSet.validate(
                            oldSectionCounts: oldCounts, newSectionCounts: box.results.sections.map(\.count))
                    } catch {
                        failures.append("controller \(id) (\(record.bound.request)): \(error)")
                    }
                }
                let pending = self.pendingIDs(shownBy: box)
                let pendingChanged = pending != box.pendingIDs
                box.pendingIDs = pending
                let complete = self.replica.hasData(record.subscriptionID)
                // Said when it flips for a controller that showed complete data before (a first load is its own
                // change already).
                let completenessChanged = complete != box.isComplete && box.isLoaded
                box.isComplete = complete
                let loadedNow = !box.isLoaded && complete
                if loadedNow {
                    box.isLoaded = true
                    for waiter in box.loadWaiters { waiter.resume() }
                    box.loadWaiters = []
                }
                let delivers =
                    !changeSet.isEmpty || changedUntold || pendingChanged || completenessChanged || cause == .reverted
                if delivers {
                    box.deliver(
                        RawChange(
                            seq: seq, changeSet: changeSet, cause: cause, error: error, pendingIDs: pending,
                            provisional: !complete))
                }
                if delivers || loadedNow { changed.append(box.observation) }
            }
            return changed
        }
        // One notification per controller and commit, after the lock: observers see the new state, and a commit that
        // does not touch a controller's query tells its observers nothing.
        for observation in changed { observation.contentDidChange() }
        if !failures.isEmpty {
            for failure in failures {
                self.logger.error("change set failed validation", metadata: ["meridian.failure": "\(failure)"])
            }
            self.changeSetValidationFailures += failures
        }
    }

    /// The pending ids a controller shows.
    func pendingIDs(shownBy box: EngineBox) -> Set<String> {
        var result: Set<String> = []
        for key in self.writes.overlay.keys where key.entity == box.entity && box.results.row(id: key.id) != nil {
            result.insert(key.id)
        }
        return result
    }

    /// Ends a subscription's controllers with an error (its Subscribe was rejected).
    func failControllers(of subscriptionID: String, with error: ClientError) {
        let ids = self.controllers.filter { $0.value.subscriptionID == subscriptionID }.map(\.key)
        let (sinks, observations) = self.view.withLock { state in
            var sinks: [AsyncThrowingStream<RawChange, any Error>.Continuation] = []
            var observations: [ResultsObservation] = []
            for id in ids {
                guard let box = state.engines[id] else { continue }
                box.error = error
                sinks += box.sinks.values
                box.sinks = [:]
                for waiter in box.loadWaiters { waiter.resume(throwing: error) }
                box.loadWaiters = []
                observations.append(box.observation)
            }
            return (sinks, observations)
        }
        // Finish outside the lock: a stream's termination handler takes the lock to unregister itself.
        for sink in sinks { sink.finish(throwing: error) }
        for observation in observations { observation.contentDidChange() }  // `error` changed
    }
}
