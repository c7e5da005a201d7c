//! The SDK clients of one run, configured for the spec's region, each counting its calls.

use crate::calls::CountCalls;
use aws_config::SdkConfig;
use aws_types::region::Region;
use engine::ApiCallCounter;

/// The AWS service clients the kinds use.
#[derive(Debug, Clone)]
pub struct AwsClients {
    pub ec2: aws_sdk_ec2::Client,
    pub route53: aws_sdk_route53::Client,
    pub logs: aws_sdk_cloudwatchlogs::Client,
    pub iam: aws_sdk_iam::Client,
    pub region: String,
}

impl AwsClients {
    /// Clients for `region` built from `base` (credentials, endpoint, retry settings).
    pub fn new(base: &SdkConfig, region: &str, counter: &ApiCallCounter) -> Self {
        let config = base
            .to_builder()
            .region(Region::new(region.to_string()))
            .build();
        let count = CountCalls(counter.clone());
        AwsClients {
            ec2: aws_sdk_ec2::Client::from_conf(
                aws_sdk_ec2::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .build(),
            ),
            route53: aws_sdk_route53::Client::from_conf(
                aws_sdk_route53::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .build(),
            ),
            logs: aws_sdk_cloudwatchlogs::Client::from_conf(
                aws_sdk_cloudwatchlogs::config::Builder::from(&config)
                    .interceptor(count.clone())
                    .build(),
            ),
            iam: aws_sdk_iam::Client::from_conf(
                aws_sdk_iam::config::Builder::from(&config)
                    .interceptor(count)
                    .build(),
            ),
            region: region.to_string(),
        }
    }
}
