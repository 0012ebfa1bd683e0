package io.coordhost.interop.authorizer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;

/**
 * An authorizer that decides by the principal's name alone and keeps no
 * ACLs, so coordhost can only learn its decisions by asking the broker:
 *
 * <ul>
 *   <li>User:ANONYMOUS (the PLAINTEXT listener: controller link, test admin)
 *       and User:admin may do everything;
 *   <li>a name starting with "ops" may do everything on groups and topics;
 *   <li>a name starting with "ro" may DESCRIBE groups and topics, and READ
 *       topics;
 *   <li>anything else is denied.
 * </ul>
 */
public final class NameRuleAuthorizer implements Authorizer {
    @Override
    public void configure(Map<String, ?> configs) {}

    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo info) {
        Map<Endpoint, CompletableFuture<Void>> ready = new HashMap<>();
        for (Endpoint e : info.endpoints()) {
            ready.put(e, CompletableFuture.completedFuture(null));
        }
        return ready;
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext ctx, List<Action> actions) {
        String name = ctx.principal().getName();
        List<AuthorizationResult> out = new ArrayList<>(actions.size());
        for (Action a : actions) {
            out.add(allowed(name, a) ? AuthorizationResult.ALLOWED : AuthorizationResult.DENIED);
        }
        return out;
    }

    static boolean allowed(String name, Action a) {
        if (name.equals("ANONYMOUS") || name.equals("admin")) {
            return true;
        }
        ResourceType rt = a.resourcePattern().resourceType();
        boolean groupOrTopic = rt == ResourceType.GROUP || rt == ResourceType.TOPIC;
        if (name.startsWith("ops")) {
            return groupOrTopic;
        }
        if (name.startsWith("ro")) {
            AclOperation op = a.operation();
            return groupOrTopic && (op == AclOperation.DESCRIBE || (rt == ResourceType.TOPIC && op == AclOperation.READ));
        }
        return false;
    }

    @Override
    public List<? extends CompletionStage<AclCreateResult>> createAcls(AuthorizableRequestContext ctx, List<AclBinding> acls) {
        List<CompletableFuture<AclCreateResult>> out = new ArrayList<>();
        for (AclBinding ignored : acls) {
            out.add(CompletableFuture.completedFuture(new AclCreateResult(new UnsupportedVersionException("NameRuleAuthorizer keeps no ACLs"))));
        }
        return out;
    }

    @Override
    public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(AuthorizableRequestContext ctx, List<AclBindingFilter> filters) {
        List<CompletableFuture<AclDeleteResult>> out = new ArrayList<>();
        for (AclBindingFilter ignored : filters) {
            out.add(CompletableFuture.completedFuture(new AclDeleteResult(List.of())));
        }
        return out;
    }

    @Override
    public Iterable<AclBinding> acls(AclBindingFilter filter) {
        return List.of();
    }

    @Override
    public void close() {}
}
