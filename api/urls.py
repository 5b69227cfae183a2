from django.urls import path
from rest_framework.routers import SimpleRouter

from api.views import (
    benchmarks,
    clusters,
    enrolment,
    estimates,
    health,
    leaderboard,
    node_agent,
    nodes,
    providers,
    reference_agent,
    stability,
    trials,
)
from certification import api as certification

router = SimpleRouter(trailing_slash=False)
router.register("benchmarks", benchmarks.BenchmarkViewSet, basename="benchmark")
router.register("nodes", nodes.NodeViewSet, basename="node")

urlpatterns = [
    path("providers/<int:provider_id>/enrolment-tokens", providers.EnrolmentTokenView.as_view(),
         name="enrolment-tokens"),
    path("nodes/<int:node_id>/revoke", providers.NodeRevokeView.as_view(), name="node-revoke"),
    path("nodes/<int:node_id>/trial-tokens", trials.TrialTokenView.as_view(), name="trial-tokens"),
    path("enrol", enrolment.EnrolView.as_view(), name="enrol"),
    path("certification-profiles", certification.ProfileListView.as_view(), name="cert-profiles"),
    path("nodes/<int:node_id>/certifications", certification.NodeCertificationView.as_view(),
         name="node-certifications"),
    path("certificates/public-key", certification.PublicKeyView.as_view(), name="cert-public-key"),
    path("certificates/<int:cert_id>", certification.CertificateView.as_view(), name="certificate"),
    path("certificates/<int:cert_id>/revoke", certification.RevokeView.as_view(),
         name="certificate-revoke"),
    path("leaderboard", leaderboard.LeaderboardView.as_view(), name="leaderboard"),
    path("leaderboard/regions", leaderboard.RegionView.as_view(), name="leaderboard-regions"),
    path("leaderboard/providers", leaderboard.ProviderView.as_view(), name="leaderboard-providers"),
    path("clusters", clusters.ClusterBoardView.as_view(), name="cluster-board"),
    path("estimates", estimates.EstimateView.as_view(), name="estimates"),
    path("links", clusters.LinkMatrixView.as_view(), name="link-matrix"),
    path("links/history", clusters.LinkHistoryView.as_view(), name="link-history"),
    path("regions/paths", clusters.RegionPathsView.as_view(), name="region-paths"),
    path("nodes/<int:node_id>/history", leaderboard.NodeHistoryView.as_view(), name="node-history"),
    path("nodes/<int:node_id>/report", leaderboard.NodeReportView.as_view(), name="node-report"),
    path("nodes/<int:node_id>/price", providers.NodePriceView.as_view(), name="node-price"),
    path("nodes/<int:node_id>/stability", stability.NodeStabilityView.as_view(),
         name="node-stability"),
    path("nodes/<int:node_id>/retests/pause", stability.RetestPauseView.as_view(),
         name="node-retests-pause"),
    path("nodes/<int:node_id>/retests/resume", stability.RetestResumeView.as_view(),
         name="node-retests-resume"),
    path("health", health.HealthView.as_view(), name="health"),
    path("reference/records", reference_agent.ReferenceRecordsView.as_view(),
         name="reference-records"),
    path("reference/allowlist", reference_agent.ReferenceAllowlistView.as_view(),
         name="reference-allowlist"),
    path("node/self", node_agent.NodeSelfView.as_view(), name="node-self"),
    path("node/heartbeat", node_agent.HeartbeatView.as_view(), name="node-heartbeat"),
    path("node/runs/<int:run_id>/claim", node_agent.ClaimView.as_view(), name="node-claim"),
    path("node/runs/<int:run_id>/progress", node_agent.ProgressView.as_view(), name="node-progress"),
    path("node/runs/<int:run_id>/result", node_agent.ResultView.as_view(), name="node-result"),
    path("node/runs/<int:run_id>/barrier", node_agent.BarrierView.as_view(), name="node-barrier"),
    path("node/runs/<int:run_id>/reference-slot", node_agent.ReferenceSlotView.as_view(),
         name="node-reference-slot"),
    *router.urls,
]
