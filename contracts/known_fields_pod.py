"""The field names of Kubernetes' core/v1 shapes (ObjectMeta, PodSpec, containers, volumes, affinity, Pod
and Node status), as the Kubernetes API reference names them: every field the API server knows, not just
those lahar reads, so a manifest written for Kubernetes or Volcano passes the unknown-field check
unchanged (field_shapes.py says what each shape means).
"""

from __future__ import annotations

from contracts.field_shapes import FREE, obj

# --- selectors and affinity ----------------------------------------------------------------------

SELECTOR_REQUIREMENT = obj("key operator values")
LABEL_SELECTOR = obj(matchLabels=FREE, matchExpressions=SELECTOR_REQUIREMENT)
NODE_SELECTOR_TERM = obj(matchExpressions=SELECTOR_REQUIREMENT, matchFields=SELECTOR_REQUIREMENT)
NODE_AFFINITY = obj(
    requiredDuringSchedulingIgnoredDuringExecution=obj(nodeSelectorTerms=NODE_SELECTOR_TERM),
    preferredDuringSchedulingIgnoredDuringExecution=obj("weight", preference=NODE_SELECTOR_TERM),
)
POD_AFFINITY_TERM = obj(
    "namespaces topologyKey matchLabelKeys mismatchLabelKeys",
    labelSelector=LABEL_SELECTOR,
    namespaceSelector=LABEL_SELECTOR,
)
POD_AFFINITY = obj(
    requiredDuringSchedulingIgnoredDuringExecution=POD_AFFINITY_TERM,
    preferredDuringSchedulingIgnoredDuringExecution=obj("weight", podAffinityTerm=POD_AFFINITY_TERM),
)
AFFINITY = obj(nodeAffinity=NODE_AFFINITY, podAffinity=POD_AFFINITY, podAntiAffinity=POD_AFFINITY)
TOLERATION = obj("key operator value effect tolerationSeconds")
TAINT = obj("key value effect timeAdded")
TOPOLOGY_SPREAD_CONSTRAINT = obj(
    "maxSkew topologyKey whenUnsatisfiable minDomains nodeAffinityPolicy nodeTaintsPolicy matchLabelKeys",
    labelSelector=LABEL_SELECTOR,
)

# --- ObjectMeta: what a user writes and what the server sets (resourceVersion, managedFields, ...),
# which `get -o yaml` prints and a user may apply again ------------------------------------------------

OWNER_REFERENCE = obj("apiVersion kind name uid controller blockOwnerDeletion")
OBJECT_META = obj(
    "name generateName namespace selfLink uid resourceVersion generation creationTimestamp"
    " deletionTimestamp deletionGracePeriodSeconds finalizers",
    labels=FREE,
    annotations=FREE,
    ownerReferences=OWNER_REFERENCE,
    # fieldsV1 is the server's own encoding of which fields a manager owns (keys such as "f:spec")
    managedFields=obj("manager operation apiVersion time fieldsType subresource", fieldsV1=FREE),
)

# --- containers ----------------------------------------------------------------------------------

RESOURCE_REQUIREMENTS = obj(limits=FREE, requests=FREE, claims=obj("name request"))
KEY_TO_PATH = obj("key path mode")
OBJECT_FIELD_SELECTOR = obj("apiVersion fieldPath")
RESOURCE_FIELD_SELECTOR = obj("containerName resource divisor")
ENV_VAR = obj(
    "name value",
    valueFrom=obj(
        fieldRef=OBJECT_FIELD_SELECTOR,
        resourceFieldRef=RESOURCE_FIELD_SELECTOR,
        configMapKeyRef=obj("name key optional"),
        secretKeyRef=obj("name key optional"),
        fileKeyRef=obj("volumeName path key optional"),
    ),
)
ENV_FROM_SOURCE = obj("prefix", configMapRef=obj("name optional"), secretRef=obj("name optional"))
CONTAINER_PORT = obj("name hostPort containerPort protocol hostIP")
EXEC_ACTION = obj("command")
HTTP_GET_ACTION = obj("path port host scheme", httpHeaders=obj("name value"))
TCP_SOCKET_ACTION = obj("port host")
PROBE = obj(
    "initialDelaySeconds timeoutSeconds periodSeconds successThreshold failureThreshold"
    " terminationGracePeriodSeconds",
    exec=EXEC_ACTION,
    httpGet=HTTP_GET_ACTION,
    tcpSocket=TCP_SOCKET_ACTION,
    grpc=obj("port service"),
)
LIFECYCLE_HANDLER = obj(
    exec=EXEC_ACTION, httpGet=HTTP_GET_ACTION, tcpSocket=TCP_SOCKET_ACTION, sleep=obj("seconds")
)
LIFECYCLE = obj("stopSignal", postStart=LIFECYCLE_HANDLER, preStop=LIFECYCLE_HANDLER)
SE_LINUX_OPTIONS = obj("user role type level")
PROFILE = obj("type localhostProfile")  # seccompProfile and appArmorProfile alike
WINDOWS_OPTIONS = obj("gmsaCredentialSpecName gmsaCredentialSpec runAsUserName hostProcess")
SECURITY_CONTEXT = obj(
    "privileged runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem allowPrivilegeEscalation procMount",
    capabilities=obj("add drop"),
    seLinuxOptions=SE_LINUX_OPTIONS,
    windowsOptions=WINDOWS_OPTIONS,
    seccompProfile=PROFILE,
    appArmorProfile=PROFILE,
)
VOLUME_MOUNT = obj("name readOnly recursiveReadOnly mountPath subPath mountPropagation subPathExpr")
CONTAINER = obj(
    "name image command args workingDir imagePullPolicy terminationMessagePath terminationMessagePolicy"
    " restartPolicy stdin stdinOnce tty",
    ports=CONTAINER_PORT,
    envFrom=ENV_FROM_SOURCE,
    env=ENV_VAR,
    resources=RESOURCE_REQUIREMENTS,
    resizePolicy=obj("resourceName restartPolicy"),
    restartPolicyRules=obj("action", exitCodes=obj("operator values")),
    volumeMounts=VOLUME_MOUNT,
    volumeDevices=obj("name devicePath"),
    livenessProbe=PROBE,
    readinessProbe=PROBE,
    startupProbe=PROBE,
    lifecycle=LIFECYCLE,
    securityContext=SECURITY_CONTEXT,
)
EPHEMERAL_CONTAINER = {**CONTAINER, **obj("targetContainerName")}

# --- volumes -------------------------------------------------------------------------------------

LOCAL_OBJECT_REFERENCE = obj("name")
PERSISTENT_VOLUME_CLAIM_SPEC = obj(
    "accessModes storageClassName volumeMode volumeName volumeAttributesClassName",
    selector=LABEL_SELECTOR,
    resources=obj(limits=FREE, requests=FREE),
    dataSource=obj("apiGroup kind name"),
    dataSourceRef=obj("apiGroup kind name namespace"),
)
DOWNWARD_API_FILE = obj("path mode", fieldRef=OBJECT_FIELD_SELECTOR, resourceFieldRef=RESOURCE_FIELD_SELECTOR)
PROJECTION = obj(
    clusterTrustBundle=obj("name signerName optional path", labelSelector=LABEL_SELECTOR),
    configMap=obj("name optional", items=KEY_TO_PATH),
    downwardAPI=obj(items=DOWNWARD_API_FILE),
    podCertificate=obj(
        "signerName keyType maxExpirationSeconds credentialBundlePath keyPath certificateChainPath",
        userAnnotations=FREE,
    ),
    secret=obj("name optional", items=KEY_TO_PATH),
    serviceAccountToken=obj("audience expirationSeconds path"),
)
VOLUME = obj(
    "name",
    hostPath=obj("path type"),
    emptyDir=obj("medium sizeLimit"),
    gcePersistentDisk=obj("pdName fsType partition readOnly"),
    awsElasticBlockStore=obj("volumeID fsType partition readOnly"),
    gitRepo=obj("repository revision directory"),
    secret=obj("secretName defaultMode optional", items=KEY_TO_PATH),
    nfs=obj("server path readOnly"),
    iscsi=obj(
        "targetPortal iqn lun iscsiInterface fsType readOnly portals chapAuthDiscovery chapAuthSession"
        " initiatorName",
        secretRef=LOCAL_OBJECT_REFERENCE,
    ),
    glusterfs=obj("endpoints path readOnly"),
    persistentVolumeClaim=obj("claimName readOnly"),
    rbd=obj("monitors image fsType pool user keyring readOnly", secretRef=LOCAL_OBJECT_REFERENCE),
    flexVolume=obj("driver fsType readOnly", secretRef=LOCAL_OBJECT_REFERENCE, options=FREE),
    cinder=obj("volumeID fsType readOnly", secretRef=LOCAL_OBJECT_REFERENCE),
    cephfs=obj("monitors path user secretFile readOnly", secretRef=LOCAL_OBJECT_REFERENCE),
    flocker=obj("datasetName datasetUUID"),
    downwardAPI=obj("defaultMode", items=DOWNWARD_API_FILE),
    fc=obj("targetWWNs lun fsType readOnly wwids"),
    azureFile=obj("secretName shareName readOnly"),
    configMap=obj("name defaultMode optional", items=KEY_TO_PATH),
    vsphereVolume=obj("volumePath fsType storagePolicyName storagePolicyID"),
    quobyte=obj("registry volume readOnly user group tenant"),
    azureDisk=obj("diskName diskURI cachingMode fsType readOnly kind"),
    photonPersistentDisk=obj("pdID fsType"),
    projected=obj("defaultMode", sources=PROJECTION),
    portworxVolume=obj("volumeID fsType readOnly"),
    scaleIO=obj(
        "gateway system sslEnabled protectionDomain storagePool storageMode volumeName fsType readOnly",
        secretRef=LOCAL_OBJECT_REFERENCE,
    ),
    storageos=obj("volumeName volumeNamespace fsType readOnly", secretRef=LOCAL_OBJECT_REFERENCE),
    # a CSI driver's own attributes, which no API enumerates
    csi=obj("driver readOnly fsType", volumeAttributes=FREE, nodePublishSecretRef=LOCAL_OBJECT_REFERENCE),
    ephemeral=obj(volumeClaimTemplate=obj(metadata=OBJECT_META, spec=PERSISTENT_VOLUME_CLAIM_SPEC)),
    image=obj("reference pullPolicy"),
)

# --- the pod -------------------------------------------------------------------------------------

POD_SECURITY_CONTEXT = obj(
    "runAsUser runAsGroup runAsNonRoot supplementalGroups supplementalGroupsPolicy fsGroup"
    " fsGroupChangePolicy seLinuxChangePolicy",
    seLinuxOptions=SE_LINUX_OPTIONS,
    windowsOptions=WINDOWS_OPTIONS,
    seccompProfile=PROFILE,
    appArmorProfile=PROFILE,
    sysctls=obj("name value"),
)
POD_SPEC = obj(
    "restartPolicy terminationGracePeriodSeconds activeDeadlineSeconds dnsPolicy serviceAccountName"
    " serviceAccount automountServiceAccountToken nodeName hostNetwork hostPID hostIPC"
    " shareProcessNamespace hostname hostnameOverride subdomain schedulerName priorityClassName priority"
    " preemptionPolicy runtimeClassName enableServiceLinks setHostnameAsFQDN hostUsers",
    volumes=VOLUME,
    initContainers=CONTAINER,
    containers=CONTAINER,
    ephemeralContainers=EPHEMERAL_CONTAINER,
    nodeSelector=FREE,
    securityContext=POD_SECURITY_CONTEXT,
    imagePullSecrets=LOCAL_OBJECT_REFERENCE,
    affinity=AFFINITY,
    tolerations=TOLERATION,
    hostAliases=obj("ip hostnames"),
    dnsConfig=obj("nameservers searches", options=obj("name value")),
    readinessGates=obj("conditionType"),
    overhead=FREE,
    topologySpreadConstraints=TOPOLOGY_SPREAD_CONSTRAINT,
    os=obj("name"),
    schedulingGates=obj("name"),
    resourceClaims=obj("name resourceClaimName resourceClaimTemplateName"),
    resources=RESOURCE_REQUIREMENTS,
    schedulingGroup=obj("podGroupName"),
)
POD_TEMPLATE_SPEC = obj(metadata=OBJECT_META, spec=POD_SPEC)

CONTAINER_STATE = obj(
    waiting=obj("reason message"),
    running=obj("startedAt"),
    terminated=obj("exitCode signal reason message startedAt finishedAt containerID"),
)
CONTAINER_STATUS = obj(
    "name ready restartCount image imageID containerID started stopSignal",
    state=CONTAINER_STATE,
    lastState=CONTAINER_STATE,
    allocatedResources=FREE,
    resources=RESOURCE_REQUIREMENTS,
    volumeMounts=obj("name mountPath readOnly recursiveReadOnly"),
    user=obj(linux=obj("uid gid supplementalGroups")),
    allocatedResourcesStatus=obj("name", resources=obj("resourceID health")),
)
POD_STATUS = obj(
    "phase message reason nominatedNodeName hostIP podIP startTime qosClass resize observedGeneration",
    conditions=obj("type status lastProbeTime lastTransitionTime reason message observedGeneration"),
    hostIPs=obj("ip"),
    podIPs=obj("ip"),
    initContainerStatuses=CONTAINER_STATUS,
    containerStatuses=CONTAINER_STATUS,
    ephemeralContainerStatuses=CONTAINER_STATUS,
    resourceClaimStatuses=obj("name resourceClaimName"),
    extendedResourceClaimStatus=obj(
        "resourceClaimName", requestMappings=obj("containerName resourceName requestName")
    ),
)

# --- the node ------------------------------------------------------------------------------------

NODE_CONFIG_SOURCE = obj(configMap=obj("namespace name uid resourceVersion kubeletConfigKey"))
NODE_SPEC = obj(
    "podCIDR podCIDRs providerID unschedulable externalID",
    taints=TAINT,
    configSource=NODE_CONFIG_SOURCE,
)
NODE_STATUS = obj(
    "phase volumesInUse declaredFeatures",
    capacity=FREE,
    allocatable=FREE,
    conditions=obj("type status lastHeartbeatTime lastTransitionTime reason message"),
    addresses=obj("type address"),
    daemonEndpoints=obj(kubeletEndpoint=obj("Port")),
    nodeInfo=obj(
        "machineID systemUUID bootID kernelVersion osImage containerRuntimeVersion kubeletVersion"
        " kubeProxyVersion operatingSystem architecture",
        swap=obj("capacity"),
    ),
    images=obj("names sizeBytes"),
    volumesAttached=obj("name devicePath"),
    config=obj(
        "error", assigned=NODE_CONFIG_SOURCE, active=NODE_CONFIG_SOURCE, lastKnownGood=NODE_CONFIG_SOURCE
    ),
    runtimeHandlers=obj("name", features=obj("recursiveReadOnlyMounts userNamespaces")),
    features=obj("supplementalGroupsPolicy"),
)
