//! The SDK clients of one run, configured for the spec's region, each counting its calls.

use crate::calls::CountCalls;
use crate::lost_answer::LostAnswers;
use aws_config::SdkConfig;
use aws_config::timeout::TimeoutConfig;
use aws_types::region::Region;
use engine::ApiCallCounter;
use std::time::Duration;

/// The AWS service clients the kinds use.
#[derive(Debug, Clone)]
pub struct AwsClients {
    pub ec2: aws_sdk_ec2::Client,
    pub route53: aws_sdk_route53::Client,
    pub logs: aws_sdk_cloudwatchlogs::Client,
    pub iam: aws_sdk_iam::Client,
    pub kms: aws_sdk_kms::Client,
    /// KMS in `[globals] secondary_region` (replicas of multi-region keys), if one is set.
    pub kms_secondary: Option<aws_sdk_kms::Client>,
    pub s3: aws_sdk_s3::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub autoscaling: aws_sdk_autoscaling::Client,
    pub elbv2: aws_sdk_elasticloadbalancingv2::Client,
    pub eks: aws_sdk_eks::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub events: aws_sdk_eventbridge::Client,
    pub s3files: aws_sdk_s3files::Client,
    pub region: String,
    pub secondary_region: Option<String>,
}

/// Every call is bounded: 10 s to connect, 60 s without a byte of the answer (a call that hangs
/// fails and is retried by the SDK); long transfers (snapshots) are not cut short.
pub(crate) fn call_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(60))
        .build()
}

impl AwsClients {
    /// Clients for `region` (and KMS in `secondary_region`) built from `base` (credentials,
    /// endpoint, retry settings).
    pub fn new(
        base: &SdkConfig,
        region: &str,
        secondary_region: Option<&str>,
        counter: &ApiCallCounter,
    ) -> Self {
        let in_region = |r: &str| {
            let config = base.to_builder().region(Region::new(r.to_string()));
            config.timeout_config(call_timeouts()).build()
        };
        let config = in_region(region);
        let count = CountCalls(counter.clone());
        let kms = |config: &SdkConfig| {
            aws_sdk_kms::Client::from_conf(
                aws_sdk_kms::config::Builder::from(config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            )
        };
        AwsClients {
            ec2: aws_sdk_ec2::Client::from_conf(
                aws_sdk_ec2::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            route53: aws_sdk_route53::Client::from_conf(
                aws_sdk_route53::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            logs: aws_sdk_cloudwatchlogs::Client::from_conf(
                aws_sdk_cloudwatchlogs::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            iam: aws_sdk_iam::Client::from_conf(
                aws_sdk_iam::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            kms: kms(&config),
            kms_secondary: secondary_region.map(|r| kms(&in_region(r))),
            s3: aws_sdk_s3::Client::from_conf(
                aws_sdk_s3::config::Builder::from(&config)
                    .force_path_style(true)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            secrets: aws_sdk_secretsmanager::Client::from_conf(
                aws_sdk_secretsmanager::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            autoscaling: aws_sdk_autoscaling::Client::from_conf(
                aws_sdk_autoscaling::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            elbv2: aws_sdk_elasticloadbalancingv2::Client::from_conf(
                aws_sdk_elasticloadbalancingv2::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            eks: aws_sdk_eks::Client::from_conf(
                aws_sdk_eks::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            s3files: aws_sdk_s3files::Client::from_conf(
                aws_sdk_s3files::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .interceptor(LostAnswers)
                    .build(),
            ),
            events: aws_sdk_eventbridge::Client::from_conf(
                aws_sdk_eventbridge::config::Builder::from(&config).interceptor(count).build(),
            ),
            region: region.to_string(),
            secondary_region: secondary_region.map(str::to_string),
        }
    }
}
