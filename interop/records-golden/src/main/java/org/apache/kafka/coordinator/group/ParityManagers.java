package org.apache.kafka.coordinator.group;

import java.util.List;
import java.util.Optional;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorExecutor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorTimer;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetricsShard;
import org.apache.kafka.timeline.SnapshotRegistry;

/**
 * coordhost test oracle: GroupMetadataManager's builder is package-private, so
 * this one-method factory lives in Kafka's package (on the classpath only; it
 * is not part of Kafka) to let HeartbeatParity build a manager.
 */
public final class ParityManagers {
    private ParityManagers() { }

    public static GroupMetadataManager build(LogContext lc, SnapshotRegistry registry, Time time,
                                             CoordinatorTimer<CoordinatorRecord> timer, CoordinatorExecutor<CoordinatorRecord> executor,
                                             GroupCoordinatorConfig config, GroupConfigManager groupConfigs,
                                             List<TaskAssignor> assignors, CoordinatorMetadataImage image,
                                             GroupCoordinatorMetricsShard metrics) {
        return new GroupMetadataManager.Builder()
            .withLogContext(lc).withSnapshotRegistry(registry).withTime(time).withTimer(timer)
            .withExecutor(executor).withConfig(config).withGroupConfigManager(groupConfigs)
            .withStreamsGroupAssignors(assignors).withMetadataImage(image)
            .withGroupCoordinatorMetricsShard(metrics).withAuthorizerPlugin(Optional.empty())
            .build();
    }
}
